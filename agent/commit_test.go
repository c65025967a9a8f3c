package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// fileRecords reads a stored session's records: their type and, for
// message and commit records, the message id.
func fileRecords(t *testing.T, st *store.JSONL, dir, id string) (lines [][]byte, kinds []string) {
	t.Helper()
	path, _ := st.Path(store.Key{WorkDir: dir, ID: id})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Message *struct {
				ID string `json:"id"`
			} `json:"message"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("record %s: %v", line, err)
		}
		kind := r.Type
		switch {
		case r.Type == "context" && bytes.Contains(line, []byte(`"textsOf":`)):
			kind += ":located"
		case r.Type == "commit":
			kind += ":" + r.ID
		case r.Type == "message" && r.Message != nil:
			kind += ":" + r.Message.ID
		}
		lines, kinds = append(lines, line), append(kinds, kind)
	}
	return lines, kinds
}

// TestRoundEndCommitsStreamedMessages: at the end of a round, a message
// whose every change the file holds as streamed events is committed by
// reference (its text is not written a second time), and a restore
// rebuilds exactly the display and the context a live session has. After
// a failed write, whose events are lost, whole message records are written
// again.
func TestRoundEndCommitsStreamedMessages(t *testing.T) {
	t.Parallel()
	const secret = "The answer is forty-two, and it streams."
	words := strings.Fields(secret + " " + secret)
	answerText := strings.Join(words, "")
	answer := func() []modeltest.Step { return modeltest.Answer("m2", words...) }
	ask := func(t *testing.T, s *agent.Session) {
		if _, err := s.Run(bg(t), "question"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		answers [][]modeltest.Step
		run     func(t *testing.T, s *agent.Session)
		// users is the number of user messages, each recorded whole;
		// located, the context records whose texts are left to the
		// display's.
		users, located int
	}{
		{name: "answer", answers: [][]modeltest.Step{answer()}, run: ask, users: 1, located: 1},
		{name: "answer cut by a failure", answers: [][]modeltest.Step{modeltest.Response(modeltest.Start("m2"),
			[]modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Block: model.BlockText}}},
			[]modeltest.Step{{Part: model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: answerText}}},
			modeltest.Fail(fmt.Errorf("too long: %w", model.ErrResponseTooLarge)))},
			run: func(t *testing.T, s *agent.Session) {
				if _, err := s.Run(bg(t), "question"); !errors.Is(err, model.ErrResponseTooLarge) {
					t.Fatalf("run: %v", err)
				}
			}, users: 1, located: 1},
		{name: "tool round", answers: [][]modeltest.Step{
			modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Calling. "),
				modeltest.ToolUse(1, "t1", "Bash", map[string]any{"command": "echo '" + secret + "'"}), modeltest.Stop("tool_use")),
			answer(),
		}, run: ask, users: 1, located: 3},
		{name: "bang", answers: [][]modeltest.Step{answer()}, run: func(t *testing.T, s *agent.Session) {
			if _, err := s.Bang(bg(t), "echo '"+secret+"'"); err != nil {
				t.Fatal(err)
			}
			ask(t, s)
		}, users: 2, located: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
			p := modeltest.NewScript(append(tc.answers, modeltest.Answer("m3", "Next."))...)
			s := newSession(t, p, func(o *agent.Options) {
				o.Store, o.WorkDir, o.PermissionMode = st, dir, protocol.ModeBypassPermissions
			})
			tc.run(t, s)
			live := s.Messages()

			lines, kinds := fileRecords(t, st, dir, s.ID())
			for k, line := range lines {
				if kinds[k] != "event" && bytes.Contains(line, []byte(answerText)) {
					t.Errorf("the answer is written again in a %s record", kinds[k])
				}
			}
			if n := countPrefix(kinds, "context:located"); n != tc.located {
				t.Errorf("records %v: %d context records with located texts, want %d", kinds, n, tc.located)
			}
			for _, m := range live.Messages {
				if m.Role == protocol.RoleAssistant && (!contains(kinds, "commit:"+m.ID) || contains(kinds, "message:"+m.ID)) {
					t.Errorf("assistant message %s: records %v, want a commit and no message record", m.ID, kinds)
				}
			}
			// A bang's message is recorded whole when it starts (the file
			// has not got it otherwise), then committed when it ends.
			if n := countPrefix(kinds, "message:"); n != tc.users {
				t.Errorf("records %v: %d message records, want %d", kinds, n, tc.users)
			}

			// A restored session shows the same and sends the same.
			rp := modeltest.NewScript(modeltest.Answer("m9", "Next."))
			r, err := agent.Open(agent.Options{Provider: rp, Store: st, WorkDir: dir}, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got, want := jsonOf(t, r.Messages().Messages), jsonOf(t, live.Messages); got != want {
				t.Fatalf("restored display\n got %s\nwant %s", got, want)
			}
			if _, err := r.Run(bg(t), "and then?"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(bg(t), "and then?"); err != nil {
				t.Fatal(err)
			}
			if got, want := jsonOf(t, rp.Request(0).Messages), jsonOf(t, p.Request(p.Count()-1).Messages); got != want {
				t.Fatalf("restored context\n got %s\nwant %s", got, want)
			}
		})
	}
}

// failOnce is a JSONL store whose logs fail one append, the first after
// arm is set, and then close failed.
type failOnce struct {
	*store.JSONL
	arm    atomic.Bool
	failed chan struct{}
}

func (s *failOnce) Create(ctx context.Context, key store.Key) (store.Log, error) {
	l, err := s.JSONL.Create(ctx, key)
	return &failOnceLog{Log: l, s: s}, err
}

type failOnceLog struct {
	store.Log
	s *failOnce
}

func (l *failOnceLog) Append(ctx context.Context, recs ...json.RawMessage) error {
	if l.s.arm.CompareAndSwap(true, false) {
		close(l.s.failed)
		return fmt.Errorf("store: write: %w", syscall.ENOSPC)
	}
	return l.Log.Append(ctx, recs...)
}

// TestCommitAfterLostWrite: when a write of a message's streamed events
// failed (the store was down for a moment), the batch is written again
// before anything later once the store takes writes again: the run ends
// saved, the file rebuilds the message by its events (the end of round is
// a commit) and a restore shows all of it.
func TestCommitAfterLostWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := &failOnce{JSONL: store.NewJSONL(t.TempDir()), failed: make(chan struct{})}
	first, second := make(chan struct{}), make(chan struct{})
	delta := func(s string) []modeltest.Step {
		return []modeltest.Step{{Part: model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: s}}}
	}
	p := modeltest.NewScript(modeltest.Response(modeltest.Start("m1"),
		[]modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Block: model.BlockText}}}, delta("Written, "),
		modeltest.Gate(first), delta("lost, "), modeltest.Gate(second), delta("then kept."), modeltest.Stop("end_turn")))
	s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir = st, dir })
	h, err := s.Submit(bg(t), "question")
	if err != nil {
		t.Fatal(err)
	}
	crashImage(t, st.JSONL, dir, s.ID(), "Written, ") // the message and its first text are in the file
	st.arm.Store(true)
	close(first)
	select {
	case <-st.failed: // the batch holding "lost, " failed
	case <-bg(t).Done():
		t.Fatal("no write failed")
	}
	close(second)
	if _, err := h.Wait(bg(t)); err != nil {
		t.Fatalf("the run ended with %v, want it saved once the store took the batch again", err)
	}
	live := s.Messages().Messages
	id := live[1].ID
	_, kinds := fileRecords(t, st.JSONL, dir, s.ID())
	if !contains(kinds, "commit:"+id) {
		t.Fatalf("records %v: the answer's events are all written, its end of round a commit", kinds)
	}
	r, err := agent.Open(agent.Options{Provider: p, Store: st, WorkDir: dir}, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Messages().Messages; len(got) != 2 || got[1].Text() != "Written, lost, then kept." {
		t.Fatalf("restored %+v", got)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, v := range list {
		if strings.HasPrefix(v, prefix) {
			n++
		}
	}
	return n
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFastStreamIsWrittenAtOnce: once more than a batch's worth (1 MiB)
// of streamed text is queued, the journal writes it without waiting for
// its delay, so a fast stream is never held (and encoded) in large
// batches. The bubble's clock stands still: only the size can have caused
// the write.
func TestFastStreamIsWrittenAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
		hold := make(chan struct{})
		piece := strings.Repeat("y", 8<<10)
		chunks := make([]string, 2<<20/len(piece))
		for i := range chunks {
			chunks[i] = piece
		}
		p := modeltest.NewScript(modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, chunks...), modeltest.Gate(hold), modeltest.Stop("end_turn")))
		s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir = st, dir })
		h, err := s.Submit(context.Background(), "question")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the stream waits at the gate; no time has passed
		path, _ := st.Path(store.Key{WorkDir: dir, ID: s.ID()})
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("y")); n < 1<<20 {
			t.Fatalf("%d bytes of the 2 MiB streamed are in the file; want at least 1 MiB written without waiting", n)
		}
		close(hold)
		if _, err := h.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
