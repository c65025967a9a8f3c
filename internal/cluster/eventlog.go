// Package cluster runs sessions over several sluice nodes: their events
// in one NATS JetStream stream (one subject per session), their ownership
// in PostgreSQL leases, and the commands of clients attached to any node
// forwarded to the node that runs the session.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/protocol"
)

// StreamName is the JetStream stream holding every session's events.
const StreamName = "SLUICE_SESSIONS"

// headerSeq carries an event's seq beside its JSON, so that a reader skips
// the events it already has without decoding them.
const headerSeq = "Sluice-Seq"

// headerFence marks a fence: a message without an event that a new owner
// appends, carrying its lease's epoch, before it reads the log to take the
// session over. Its Sluice-Seq is the seq of the event before it.
const headerFence = "Sluice-Fence"

// headerEpoch carries the epoch of the lease under which an event was
// appended, so that a fence never goes after the events of a newer owner.
const headerEpoch = "Sluice-Epoch"

// Errors of the event log.
var (
	// ErrFenced means another writer appended to the session's log since
	// this one last did: this node no longer owns the session and must
	// stop publishing for it.
	ErrFenced = errors.New("cluster: the session's log moved on under another owner")
	// ErrGap means the log does not hold the events right after the seq a
	// reader asked for (they were trimmed after a checkpoint): load the
	// checkpoint again.
	ErrGap = errors.New("cluster: the log no longer holds the events asked for")
	// ErrOutcomeUnknown means a publish may or may not have been stored
	// (its answer did not come in time, or what the log holds could not
	// be read to tell): not a fence. The same Append again finds out, and
	// stores the event once either way.
	ErrOutcomeUnknown = errors.New("cluster: whether the event was stored is not known yet")
	// ErrBadSessionID means the id cannot be a subject token.
	ErrBadSessionID = errors.New("cluster: session id not usable as a subject token")
)

// Subject is the subject of a session's events.
func Subject(session string) string { return "sluice.session." + session + ".events" }

// checkID refuses ids that would change a subject's shape.
func checkID(session string) error {
	if session == "" || strings.ContainsAny(session, ".*> \t\r\n") {
		return fmt.Errorf("%w: %q", ErrBadSessionID, session)
	}
	return nil
}

// Log is the sessions' event log. It is safe for concurrent use.
type Log struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	stream jetstream.Stream
}

// OpenLog creates the stream, or takes it as it is when another node has
// created it.
func OpenLog(ctx context.Context, js jetstream.JetStream) (*Log, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:     StreamName,
		Subjects: []string{Subject("*")},
		Storage:  jetstream.FileStorage,
		// Retention is bounded by trimming each session's subject up to
		// its latest checkpoint (Trim), not by age: an idle session's
		// last events must stay, they fence its next owner.
		Retention: jetstream.LimitsPolicy,
		// Long enough for a publisher's retry after a lost ack.
		Duplicates: 2 * time.Minute,
		// Every session a node follows (a client attached to a node that
		// does not own it, a getMessages there) is an ordered consumer of
		// this one stream. Unless the stream names a limit, nats-server
		// applies its default of 1,000 consumers per stream, and the
		// 1,001st follower failed ("maximum consumers limit reached").
		MaxConsumers: math.MaxInt32,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: create the %s stream: %w", StreamName, err)
	}
	return &Log{js: js, nc: js.Conn(), stream: st}, nil
}

// Position is where a session's log ends: the seq of its last event and
// the stream sequence of the message holding it (0, 0 for an empty log).
type Position struct {
	Seq    int64
	Stream uint64
}

// Last returns the end of the session's log.
func (l *Log) Last(ctx context.Context, session string) (Position, error) {
	if err := checkID(session); err != nil {
		return Position{}, err
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, Subject(session))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("cluster: last event of %s: %w", session, err)
	}
	seq, err := msgSeq(m.Header)
	if err != nil {
		return Position{}, err
	}
	return Position{Seq: seq, Stream: m.Sequence}, nil
}

func msgSeq(h nats.Header) (int64, error) {
	seq, err := strconv.ParseInt(h.Get(headerSeq), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: a log message without a valid %s header: %w", headerSeq, err)
	}
	return seq, nil
}

// Fence appends a fence for the lease of the given epoch after the
// session's last message and returns the log's end with it. Any writer
// that started before it (an owner that lost its lease without noticing:
// paused, partitioned) fails with ErrFenced from then on, since the subject
// no longer ends where it expects; what such a writer stored before the
// fence is in the log, ahead of it, for the new owner to read. The fence
// itself is fenced by epoch: it fails with ErrFenced when the log already
// ends with a newer lease's fence or events, and the check and the append
// are one step (the append expects the message checked to be the last), so
// a node paused between taking a lease and fencing never fences a newer
// owner out.
func (l *Log) Fence(ctx context.Context, session string, epoch int64) (Position, error) {
	if err := checkID(session); err != nil {
		return Position{}, err
	}
	for {
		var pos Position
		m, err := l.stream.GetLastMsgForSubject(ctx, Subject(session))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return Position{}, fmt.Errorf("cluster: last event of %s: %w", session, err)
		default:
			if pos.Seq, err = msgSeq(m.Header); err != nil {
				return Position{}, err
			}
			pos.Stream = m.Sequence
			if e := msgEpoch(m.Header); e > epoch {
				return Position{}, fmt.Errorf("%w: %s was fenced by epoch %d, after %d", ErrFenced, session, e, epoch)
			}
		}
		msg := &nats.Msg{Subject: Subject(session), Header: nats.Header{
			headerSeq:                           {strconv.FormatInt(pos.Seq, 10)},
			headerFence:                         {strconv.FormatInt(epoch, 10)},
			jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatUint(pos.Stream, 10)},
		}}
		ack, err := l.js.PublishMsg(ctx, msg)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			continue // appended to meanwhile: check it again, fence after it
		}
		if err != nil {
			return Position{}, fmt.Errorf("cluster: fence %s: %w", session, err)
		}
		return Position{Seq: pos.Seq, Stream: ack.Sequence}, nil
	}
}

// msgEpoch is the epoch of the lease a log message was written under: a
// fence's, or an event's (0 for an event written before events carried
// it).
func msgEpoch(h nats.Header) int64 {
	v := h.Get(headerFence)
	if v == "" {
		v = h.Get(headerEpoch)
	}
	e, _ := strconv.ParseInt(v, 10, 64)
	return e
}

// Writer appends one session's events. Only the session's owner has one;
// it is not safe for concurrent use. Close it when done.
type Writer struct {
	log     *Log
	session string
	pos     Position
	// acks receives the stream's answers to this writer's publishes, on
	// inbox.<attempt>: straight from the connection's reader, without the
	// shared request multiplexer's extra hand-over (one goroutine less to
	// wake for every event, on a path every client waits on).
	acks    chan *nats.Msg
	acksSub *nats.Subscription
	inbox   string
	attempt uint64
	// msg is the publish of every Append, its header values overwritten
	// each time: PublishMsg copies it into the connection's buffer before
	// it returns, and a message and a header map per event were half of
	// what the owner allocated on the way to the stream.
	msg nats.Msg
}

// ackBuffer is the capacity of a writer's ack channel. One publish is in
// flight at a time; what else can arrive is the late answer of an attempt
// given up on, which the next Append reads and skips. (SubscribeSync's
// channel would hold 64 Ki pointers, 512 KiB per owned session, all of it
// scanned by every garbage collection.) An answer dropped for a full
// channel is an attempt that times out and is retried, as a lost one is.
const ackBuffer = 16

// Writer returns a writer that continues the session's log where it ends
// now, for the holder of the lease of epoch (its events carry it). Its
// first Append fails with ErrFenced if anyone appends before it.
func (l *Log) Writer(ctx context.Context, session string, epoch int64) (*Writer, error) {
	pos, err := l.Last(ctx, session)
	if err != nil {
		return nil, err
	}
	inbox := l.nc.NewInbox()
	acks := make(chan *nats.Msg, ackBuffer)
	sub, err := l.nc.ChanSubscribe(inbox+".*", acks)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe to the acks of %s: %w", session, err)
	}
	w := &Writer{log: l, session: session, pos: pos, acks: acks, acksSub: sub, inbox: inbox + "."}
	w.msg = nats.Msg{Subject: Subject(session), Header: nats.Header{
		headerSeq:                           {""},
		headerEpoch:                         {strconv.FormatInt(epoch, 10)},
		jetstream.MsgIDHeader:               {""},
		jetstream.ExpectedLastSubjSeqHeader: {""},
	}}
	return w, nil
}

// Close ends the writer's subscription to its acks.
func (w *Writer) Close() error { return w.acksSub.Unsubscribe() }

// Position is where the log ends after the writer's last append.
func (w *Writer) Position() Position { return w.pos }

// pubAck is the stream's answer to a publish.
type pubAck struct {
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Error     *struct {
		Code        int                 `json:"code"`
		ErrorCode   jetstream.ErrorCode `json:"err_code"`
		Description string              `json:"description"`
	} `json:"error"`
}

// Append publishes ev, whose seq must continue the log (a merged event's
// first seq, for one that covers several). It returns once the stream
// stored it. The message id <session>:<seq> makes a retried publish a
// no-op, and the expected last sequence of the subject makes it fail with
// ErrFenced when another writer appended since.
func (w *Writer) Append(ctx context.Context, ev protocol.Event) error {
	h := ev.Head()
	if h.SessionID != w.session || h.From() != w.pos.Seq+1 {
		return fmt.Errorf("cluster: event %s of %s covering %d..%d does not continue the log of %s at %d",
			ev.Method(), h.SessionID, h.From(), h.Seq, w.session, w.pos.Seq)
	}
	data, err := protocol.Encode(ev)
	if err != nil {
		return err
	}
	seq := strconv.FormatInt(h.Seq, 10)
	w.attempt++
	reply := w.inbox + strconv.FormatUint(w.attempt, 10)
	msg := &w.msg
	msg.Reply, msg.Data = reply, data
	msg.Header[headerSeq][0] = seq
	msg.Header[jetstream.MsgIDHeader][0] = w.session + ":" + seq
	msg.Header[jetstream.ExpectedLastSubjSeqHeader][0] = strconv.FormatUint(w.pos.Stream, 10)
	if err := w.log.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("cluster: publish %s seq %d: %w", w.session, h.Seq, err)
	}
	var resp *nats.Msg
	for {
		select {
		case resp = <-w.acks:
		case <-ctx.Done():
			return fmt.Errorf("%w: publish %s seq %d: %w", ErrOutcomeUnknown, w.session, h.Seq, ctx.Err())
		}
		if resp.Subject == reply {
			break
		}
		// The late answer to an earlier attempt, given up on: what it
		// did is found out below, from the subject's last message.
	}
	if resp.Header.Get("Status") == "503" {
		return fmt.Errorf("cluster: publish %s seq %d: %w", w.session, h.Seq, nats.ErrNoResponders)
	}
	var ack pubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return fmt.Errorf("cluster: publish %s seq %d: the stream's answer: %w", w.session, h.Seq, err)
	}
	switch {
	case ack.Error != nil && (ack.Error.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		ack.Error.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		// The subject moved on: by this very event, when an earlier
		// attempt's ack was lost or not waited for (the server checks the
		// expected sequence before the message id), or by another writer.
		// Only the subject's last message tells which; unread, it is not
		// known yet — not a fence: a loaded server that answered a
		// publish late and the read after it later still made the owner
		// give its session up mid-run.
		last, lerr := w.log.stream.GetLastMsgForSubject(ctx, msg.Subject)
		if lerr != nil {
			return fmt.Errorf("%w: publish %s seq %d: the log moved past %d, and its end could not be read: %w",
				ErrOutcomeUnknown, w.session, h.Seq, w.pos.Stream, lerr)
		}
		if last.Header.Get(headerSeq) == seq && bytes.Equal(last.Data, data) {
			w.pos = Position{Seq: h.Seq, Stream: last.Sequence}
			return nil
		}
		return fmt.Errorf("%w: %s at seq %d", ErrFenced, w.session, h.Seq)
	case ack.Error != nil:
		return fmt.Errorf("cluster: publish %s seq %d: %s (%d)", w.session, h.Seq, ack.Error.Description, ack.Error.ErrorCode)
	case ack.Seq == 0:
		return fmt.Errorf("cluster: publish %s seq %d: an answer without a stream sequence: %s", w.session, h.Seq, resp.Data)
	case ack.Duplicate:
		// The id was stored already: by an earlier attempt of ours whose
		// ack was lost, or by another owner that got there first.
		stored, err := w.log.stream.GetMsg(ctx, ack.Seq)
		if err != nil {
			return fmt.Errorf("%w: check the stored copy of %s seq %d: %w", ErrOutcomeUnknown, w.session, h.Seq, err)
		}
		if !bytes.Equal(stored.Data, data) {
			return fmt.Errorf("%w: %s seq %d was written by another owner", ErrFenced, w.session, h.Seq)
		}
	}
	w.pos = Position{Seq: h.Seq, Stream: ack.Seq}
	return nil
}

// Follow calls fn with the session's events after seq `after`, in order,
// first those the log holds and then each new one as it is stored, until
// ctx ends (it returns ctx's error) or fn returns an error (returned as
// is). It fails with ErrGap when the log's first event after `after` is not
// after+1: the events in between were trimmed. A negative after starts at
// the first event the log holds, whatever its seq.
func (l *Log) Follow(ctx context.Context, session string, after int64, fn func(protocol.Event) error) error {
	if err := checkID(session); err != nil {
		return err
	}
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subject(session)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("cluster: follow %s: %w", session, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("cluster: follow %s: %w", session, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer func() {
		if stop() {
			it.Stop()
		}
	}()
	next := after + 1
	first := after < 0
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("cluster: follow %s: %w", session, err)
		}
		if m.Headers().Get(headerFence) != "" {
			continue // no event
		}
		seq, err := msgSeq(m.Headers())
		if err != nil {
			return err
		}
		if seq < next && !first {
			continue // before the reader's seq: it has this one
		}
		ev, err := protocol.DecodeNotification(m.Data())
		if err != nil {
			return fmt.Errorf("cluster: %s seq %d in the log: %w", session, seq, err)
		}
		if first {
			next, first = ev.Head().From(), false
		}
		if from := ev.Head().From(); from != next {
			return fmt.Errorf("%w: %s holds %d..%d after %d", ErrGap, session, from, seq, next-1)
		}
		if err := fn(ev); err != nil {
			return err
		}
		next = seq + 1
	}
}

// Trim drops the session's messages stored before stream sequence keep
// (those a checkpoint covers), for the holder of the lease of epoch. The
// last message always stays: it is what fences the next writer. It fails
// with ErrFenced, trimming nothing, when the log ends with a newer lease's
// fence or events. JetStream's purge cannot be made conditional, so a
// holder paused between that check and the purge can still purge late;
// what it purges then is only what precedes its own last append, before
// the newer owner's fence, and covered by a checkpoint it saved.
func (l *Log) Trim(ctx context.Context, session string, keep uint64, epoch int64) error {
	if err := checkID(session); err != nil {
		return err
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, Subject(session))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: last event of %s: %w", session, err)
	}
	if e := msgEpoch(m.Header); e > epoch {
		return fmt.Errorf("%w: %s was fenced by epoch %d, after %d", ErrFenced, session, e, epoch)
	}
	keep = min(keep, m.Sequence)
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(Subject(session)), jetstream.WithPurgeSequence(keep)); err != nil {
		return fmt.Errorf("cluster: trim %s: %w", session, err)
	}
	return nil
}
