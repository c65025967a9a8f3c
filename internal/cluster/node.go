package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/store"
)

// Lease is a node's hold on a session (see store/pgstore).
type Lease struct {
	Session, Node string
	Epoch         int64
	Expires       time.Time
}

// Errors of Leases, which an implementation returns wrapped or as is.
var (
	// ErrLeaseHeld: another node holds an unexpired lease on the session.
	ErrLeaseHeld = errors.New("cluster: the session's lease is held by another node")
	// ErrLeaseLost: the lease was taken over; stop running the session.
	ErrLeaseLost = errors.New("cluster: the session's lease was lost")
)

// Leases is the durable side of ownership: one lease per session with an
// epoch, expiring by the database's clock, and the session's checkpoint
// (its view state at a seq), written only by the lease's holder.
type Leases interface {
	AcquireLease(ctx context.Context, session, node string, ttl time.Duration) (Lease, error)
	// RenewLeases renews those of ls still held (same node and epoch)
	// and returns them with their new expiry; one missing was lost.
	RenewLeases(ctx context.Context, ls []Lease, ttl time.Duration) ([]Lease, error)
	ReleaseLease(ctx context.Context, l Lease) error
	Owner(ctx context.Context, session string) (Lease, error)
	SaveCheckpoint(ctx context.Context, l Lease, snapshot json.RawMessage, seq int64) error
	LoadCheckpoint(ctx context.Context, session string) (json.RawMessage, int64, error)
	// Unheld returns those of sessions on which no node holds an
	// unexpired lease.
	Unheld(ctx context.Context, sessions []string) ([]string, error)
	// Fence returns st as the holder of l writes it: its appends fail
	// once l is no longer the session's lease (st as is when it is not
	// this implementation's store).
	Fence(st store.Store, l Lease) store.Store
}

// DefaultLeaseTTL is how long a dead node keeps its sessions.
const DefaultLeaseTTL = 10 * time.Second

// Config configures a Node.
type Config struct {
	// NodeID names this node in leases, initialize and listSessions.
	NodeID string
	// NATS is the connection to the NATS server (with JetStream).
	NATS *nats.Conn
	// Leases holds the leases and checkpoints.
	Leases Leases
	// LeaseTTL is the leases' time to live (default DefaultLeaseTTL). A
	// node renews its leases every third of it.
	LeaseTTL time.Duration
	// CheckpointEvery is the number of events between two checkpoints of
	// a session (default 512); a run's end checkpoints too.
	CheckpointEvery int
	// Options returns the agent options of a session this node takes over
	// by itself (a dead node's running session), in its working directory.
	// Nil: the node takes over only the sessions a client opens.
	Options func(ctx context.Context, workDir string) (agent.Options, error)
	// Logger receives diagnostics (default: discarded).
	Logger *slog.Logger
}

// Node is one sluice process of a cluster: it runs the sessions it holds
// leases on and mirrors the others from the event log, for the clients
// attached to it. It is an session.Host. The rule for working directories: a
// node runs a session (takes its lease) only if the session's working
// directory is a directory on this node — a shared volume, or the same
// path on every node; a node that cannot see it still serves the
// session's clients, the commands going to a node that can.
type Node struct {
	cfg  Config
	log  *slog.Logger
	elog *Log
	meta jetstream.KeyValue

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	handles map[string]*handle
	opening map[string]chan struct{} // closed when the handle is registered or failed
	closed  bool
}

// metaBucket holds each session's description, for the nodes that do not
// run it, and whether it is running, for the nodes that look for sessions
// whose owner died mid-run.
const metaBucket = "sluice-sessions"

// sessionMeta is a session's entry in metaBucket.
type sessionMeta struct {
	WorkDir        string                  `json:"workDir"`
	Model          string                  `json:"model,omitempty"`
	PermissionMode protocol.PermissionMode `json:"permissionMode"`
	Tools          []string                `json:"tools"`
	// Subagents travel with the tools: both are fixed when the session
	// starts on a node.
	Subagents []session.Subagent `json:"subagents,omitempty"`
	Node      string             `json:"node"`
	Running   bool               `json:"running"`
	// Epoch is the epoch of the lease whose holder wrote the entry: no
	// holder of an older lease may replace it (putMeta).
	Epoch int64 `json:"epoch,omitempty"`
}

// Start joins the cluster: it creates the stream and the bucket if need be
// and starts watching for sessions that a dead node was running.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.NodeID == "" || cfg.NATS == nil || cfg.Leases == nil {
		return nil, errors.New("cluster: NodeID, NATS and Leases are required")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = 512
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(cfg.NATS)
	if err != nil {
		return nil, err
	}
	elog, err := OpenLog(ctx, js)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: metaBucket, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("cluster: create the %s bucket: %w", metaBucket, err)
	}
	nctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), elog: elog, meta: kv,
		ctx: nctx, cancel: cancel, handles: map[string]*handle{}, opening: map[string]chan struct{}{}}
	n.wg.Add(2)
	go n.sweep()
	go n.renewLeases()
	return n, nil
}

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Close stops the sessions this node runs (their runs end as aborted; the
// leases are released so that another node takes them at once) and the
// mirrors.
func (n *Node) Close() error {
	n.mu.Lock()
	n.closed = true
	hs := make([]*handle, 0, len(n.handles))
	for _, h := range n.handles {
		hs = append(hs, h)
	}
	n.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, h.Close())
	}
	n.cancel()
	n.wg.Wait()
	return errors.Join(errs...)
}

// visible is the working-directory rule: this node can run a session in
// dir only if dir is a directory here.
func visible(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// New starts a session on this node: it takes the new session's lease and
// runs its agent here.
func (n *Node) New(ctx context.Context, opts agent.Options) (session.Session, error) {
	if opts.SessionID == "" {
		opts.SessionID = uuid.NewString()
	}
	id := opts.SessionID
	if err := checkID(id); err != nil {
		return nil, err
	}
	if !visible(opts.WorkDir) {
		return nil, fmt.Errorf("cluster: working directory %s is not a directory on node %s", opts.WorkDir, n.cfg.NodeID)
	}
	asked := time.Now()
	lease, err := n.cfg.Leases.AcquireLease(ctx, id, n.cfg.NodeID, n.cfg.LeaseTTL)
	if err != nil {
		return nil, fmt.Errorf("cluster: lease on new session %s: %w", id, err)
	}
	h := n.newHandle(id, protocol.Snapshot{})
	if opts.Store != nil {
		opts.Store = n.cfg.Leases.Fence(opts.Store, lease)
	}
	sess, err := agent.New(opts)
	if err == nil {
		err = h.own(ctx, lease, asked, sess)
	}
	if err != nil {
		if sess != nil {
			sess.Close()
		}
		n.cfg.Leases.ReleaseLease(context.WithoutCancel(ctx), lease)
		return nil, err
	}
	if err := n.register(h); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Open returns a handle on session id: run here if this node holds its
// lease or can take it (free or expired, and its working directory is
// visible here), mirrored from the log otherwise.
func (n *Node) Open(ctx context.Context, id string, options func(workDir string) (agent.Options, error)) (session.Session, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	// One handle per session: a client's open and the sweeper's can race.
	for {
		n.mu.Lock()
		if h, ok := n.handles[id]; ok {
			n.mu.Unlock()
			return h, nil
		}
		wait, busy := n.opening[id]
		if !busy {
			done := make(chan struct{})
			n.opening[id] = done
			n.mu.Unlock()
			defer func() {
				n.mu.Lock()
				delete(n.opening, id)
				n.mu.Unlock()
				close(done)
			}()
			break
		}
		n.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	snap, err := n.checkpoint(ctx, id)
	if err != nil {
		return nil, err
	}
	h := n.newHandle(id, snap)
	if options != nil {
		h.options = func(_ context.Context, dir string) (agent.Options, error) { return options(dir) }
	}
	if err := h.backfill(ctx); err != nil {
		n.log.Warn("cannot read a session's log before its checkpoint", "session", id, "err", err)
	}
	if err := h.catchUp(ctx); err != nil {
		return nil, err
	}
	m, err := n.loadMeta(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: session %s is not known to the cluster", store.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	h.setMeta(m)
	if err := h.takeOrFollow(ctx); err != nil {
		h.Close()
		return nil, err
	}
	if err := n.register(h); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Owner names the node holding session id's lease, "" when none does.
func (n *Node) Owner(ctx context.Context, id string) string {
	l, err := n.cfg.Leases.Owner(ctx, id)
	if err != nil {
		n.log.Warn("cannot read a session's owner", "session", id, "err", err)
		return ""
	}
	return l.Node
}

func (n *Node) register(h *handle) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("cluster: the node is shutting down")
	}
	if _, ok := n.handles[h.id]; ok {
		return fmt.Errorf("cluster: session %s opened twice", h.id)
	}
	n.handles[h.id] = h
	return nil
}

// checkpoint loads a session's latest checkpoint (the empty state at seq 0
// when there is none).
func (n *Node) checkpoint(ctx context.Context, id string) (protocol.Snapshot, error) {
	raw, seq, err := n.cfg.Leases.LoadCheckpoint(ctx, id)
	if err != nil {
		return protocol.Snapshot{}, err
	}
	if seq == 0 && len(raw) == 0 {
		return protocol.Snapshot{}, nil
	}
	var snap protocol.Snapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return protocol.Snapshot{}, fmt.Errorf("cluster: checkpoint of %s: %w", id, err)
	}
	snap.Seq = seq
	return snap, nil
}

func (n *Node) loadMeta(ctx context.Context, id string) (sessionMeta, error) {
	e, err := n.meta.Get(ctx, id)
	if err != nil {
		return sessionMeta{}, err
	}
	var m sessionMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return sessionMeta{}, fmt.Errorf("cluster: description of %s: %w", id, err)
	}
	return m, nil
}

// putMeta records a session's description as the holder of the lease of
// epoch. It is fenced by epoch: it fails with ErrFenced once the entry was
// written under a newer lease, and the check and the write are one step,
// the write replacing only the revision checked. So an owner that lost
// its lease without noticing (paused past the TTL, cut off) writes nothing
// over its successor's entry, however late it wakes.
func (n *Node) putMeta(ctx context.Context, id string, m sessionMeta, epoch int64) error {
	m.Epoch = epoch
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	for {
		e, err := n.meta.Get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			_, err = n.meta.Create(ctx, id, b)
		case err != nil:
			return err
		default:
			var cur sessionMeta
			if json.Unmarshal(e.Value(), &cur) == nil && cur.Epoch > epoch {
				return fmt.Errorf("%w: the description of %s was written under epoch %d, after %d", ErrFenced, id, cur.Epoch, epoch)
			}
			_, err = n.meta.Update(ctx, id, b, e.Revision())
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		// Written in between: check the new entry's epoch.
	}
}

// sweep looks, every quarter of the lease TTL, for running sessions that
// no node holds a lease on — their node died, was paused past the TTL or
// lost the database, this node included — and takes over those whose
// working directory it can see: their interrupted run is ended and
// published without waiting for a client's command. It knows the running
// sessions by watching the bucket, and asks the database about all of
// them at once.
func (n *Node) sweep() {
	defer n.wg.Done()
	// The watch is made again when it ends (the NATS server restarted):
	// its first values are the bucket as it is then.
	var w jetstream.KeyWatcher
	var updates <-chan jetstream.KeyValueEntry
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	running := map[string]sessionMeta{}
	// Each adoption runs on its own, bounded: one that waits (on a
	// slow stream, say) holds up no other.
	adopting, done := map[string]bool{}, make(chan string)
	t := time.NewTicker(max(n.cfg.LeaseTTL/4, 50*time.Millisecond))
	defer t.Stop()
	for {
		if w == nil {
			var err error
			if w, err = n.meta.WatchAll(n.ctx); err != nil {
				w = nil
				n.log.Warn("cannot watch the sessions; an orphaned session waits for a command until the watch works", "err", err)
			} else {
				updates = w.Updates()
				clear(running)
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case e, ok := <-updates:
			if !ok {
				w.Stop()
				w, updates = nil, nil
				continue
			}
			if e == nil {
				continue // the initial values are in
			}
			var m sessionMeta
			if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &m) != nil || !m.Running {
				delete(running, e.Key())
				continue
			}
			running[e.Key()] = m
		case <-t.C:
			var ids []string
			for id, m := range running {
				if n.runs(id) || !visible(m.WorkDir) {
					continue
				}
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL)
			orphans, err := n.cfg.Leases.Unheld(ctx, ids)
			cancel()
			if err != nil {
				n.log.Warn("cannot look for orphaned sessions", "err", err)
				continue
			}
			for _, id := range orphans {
				if adopting[id] {
					continue
				}
				adopting[id] = true
				n.wg.Add(1)
				go func() {
					defer n.wg.Done()
					n.adopt(id, running[id])
					select {
					case done <- id:
					case <-n.ctx.Done():
					}
				}()
			}
		case id := <-done:
			delete(adopting, id)
		}
	}
}

// runs reports whether this node runs session id.
func (n *Node) runs(id string) bool {
	n.mu.Lock()
	h := n.handles[id]
	n.mu.Unlock()
	return h != nil && h.owner() != nil
}

// adopt takes over session id, which was running when its node stopped
// holding its lease.
func (n *Node) adopt(id string, m sessionMeta) {
	ctx, cancel := context.WithTimeout(n.ctx, 2*n.cfg.LeaseTTL+10*time.Second)
	defer cancel()
	n.log.Info("adopting a session whose node stopped holding it mid-run", "session", id, "was", m.Node)
	n.mu.Lock()
	h := n.handles[id]
	n.mu.Unlock()
	if h != nil {
		h.tryTake(ctx)
		return
	}
	if _, err := n.Open(ctx, id, nil); err != nil {
		n.log.Warn("cannot adopt a session", "session", id, "err", err)
	}
}
