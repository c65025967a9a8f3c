package claudecode

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/relay/backend/claudecode/fakeclaude"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
)

func TestMain(m *testing.M) {
	fakeclaude.Main()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { testbin.Cleanup() }))
}

type memKV struct {
	mu sync.Mutex
	m  map[string]string
}

func (k *memKV) Get(_ context.Context, key string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	if !ok {
		return "", store.ErrNotFound
	}
	return v, nil
}

func (k *memKV) Put(_ context.Context, key, value string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if value == "" {
		delete(k.m, key)
	} else {
		k.m[key] = value
	}
	return nil
}

func fixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/tool_use_bash.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool_use_bash.ndjson"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func drain(t *testing.T, r interface {
	Next(context.Context) (protocol.Event, error)
}) []protocol.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []protocol.Event
	for {
		ev, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

func TestRunsResumeTheSession(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	kv := &memKV{m: map[string]string{}}
	b := New(Config{Command: os.Args[0], Env: fakeclaude.Env(dir), KV: kv, PermissionMode: "acceptEdits", Model: "opus"})
	conv, err := b.Open(context.Background(), "chat1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		r, err := conv.Start(context.Background(), "tool_use_bash.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		evs := drain(t, r)
		var stops []string
		for _, ev := range evs {
			if te, ok := ev.(protocol.TurnEnded); ok {
				stops = append(stops, te.StopReason)
			}
		}
		if strings.Join(stops, ",") != "tool_use,end_turn" || r.Result() != "The command printed: hello" {
			t.Errorf("run %d: stops %v, result %q", i, stops, r.Result())
		}
	}
	const session = "c329f226-2bd5-4c40-aa68-a5fa6f7f404d"
	if conv.Session() != session {
		t.Errorf("session %q", conv.Session())
	}
	inv, err := fakeclaude.Invocations(dir)
	if err != nil || len(inv) != 2 {
		t.Fatalf("invocations %v, %v", inv, err)
	}
	want := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--model", "opus", "--permission-mode", "acceptEdits"}
	if !slices.Equal(inv[0].Args, want) {
		t.Errorf("first args %q", inv[0].Args)
	}
	if !slices.Contains(inv[1].Args, "--resume") || !slices.Contains(inv[1].Args, session) {
		t.Errorf("second args %q do not resume", inv[1].Args)
	}
	if inv[0].Prompt != "tool_use_bash.ndjson" {
		t.Errorf("prompt %q", inv[0].Prompt)
	}

	// A new conversation object for the chat (a restart) resumes too; /new
	// forgets the session.
	conv2, _ := b.Open(context.Background(), "chat1")
	if conv2.Session() != session {
		t.Errorf("after reopen: session %q", conv2.Session())
	}
	if err := conv2.SetModel("sonnet"); err != nil {
		t.Fatal(err)
	}
	if err := conv2.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	conv3, _ := b.Open(context.Background(), "chat1")
	if conv3.Session() != "" || conv3.Model() != "sonnet" {
		t.Errorf("after /new: session %q model %q", conv3.Session(), conv3.Model())
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	b := New(Config{Command: os.Args[0], Env: fakeclaude.Env(dir), KV: &memKV{m: map[string]string{}}})
	conv, _ := b.Open(context.Background(), "c")
	// Stop in the middle of the second turn's text.
	r, err := conv.Start(context.Background(), "hang:tool_use_bash.ndjson:23")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var text strings.Builder
	for !strings.Contains(text.String(), "The command prin") {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cu, ok := ev.(protocol.AssistantContentUpdated); ok {
			text.WriteString(cu.Chunk)
		}
	}
	conv.Abort("stop")
	evs := drain(t, r)
	if len(evs) < 2 {
		t.Fatalf("after abort: %v", evs)
	}
	if eb, ok := evs[len(evs)-2].(protocol.ErrorBlockAdded); !ok || !strings.Contains(eb.Error, "claude") {
		t.Errorf("after abort: %#v", evs[len(evs)-2])
	}
}

func TestFailedProcess(t *testing.T) {
	t.Parallel()
	b := New(Config{Command: os.Args[0], Env: fakeclaude.Env(fixtures(t)), KV: &memKV{m: map[string]string{}}})
	conv, _ := b.Open(context.Background(), "c")
	r, err := conv.Start(context.Background(), "no-such-run")
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, r)
	if len(evs) != 2 {
		t.Fatalf("events %v", evs)
	}
	if eb, ok := evs[0].(protocol.ErrorBlockAdded); !ok || !strings.Contains(eb.Error, "no recorded run") {
		t.Errorf("error %#v", evs[0])
	}
	if conv.AnswerPermission("x", protocol.DecisionAllow) == nil {
		t.Error("AnswerPermission must be unsupported")
	}
	if _, err := New(Config{Command: filepath.Join(t.TempDir(), "missing"), KV: &memKV{m: map[string]string{}}}).Open(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}

// The backend with sluice itself as its `claude` (the chat-bridge case of
// issue 11): a run streams the tool call and the answer, its session is
// kept, and the next run resumes it with the conversation so far.
func TestSluiceAsClaude(t *testing.T) {
	t.Parallel()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, mustAnswers(t, "bash:echo hello", "say:The command printed: hello", "say:Again."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := t.TempDir()
	work := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SLUICE_HOME=" + filepath.Join(home, "sluice"),
		"SLUICE_CONFIG=" + filepath.Join(home, "none.json"), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + srv.URL,
	}
	b := New(Config{Command: testbin.Sluice(t), Env: env, WorkDir: work, KV: &memKV{m: map[string]string{}}, PermissionMode: "bypassPermissions"})
	conv, err := b.Open(context.Background(), "chat1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := conv.Start(context.Background(), "run echo hello")
	if err != nil {
		t.Fatal(err)
	}
	var stops []string
	for _, ev := range drain(t, r) {
		if te, ok := ev.(protocol.TurnEnded); ok {
			stops = append(stops, te.StopReason)
		}
	}
	if strings.Join(stops, ",") != "tool_use,end_turn" || r.Result() != "The command printed: hello" {
		t.Fatalf("stops %v, result %q", stops, r.Result())
	}
	session := conv.Session()
	if session == "" {
		t.Fatal("no session kept")
	}
	r, err = conv.Start(context.Background(), "once more")
	if err != nil {
		t.Fatal(err)
	}
	drain(t, r)
	if r.Result() != "Again." || conv.Session() != session {
		t.Fatalf("second run: result %q, session %q (was %q)", r.Result(), conv.Session(), session)
	}
	sum, err := fakemodel.Summary(fakemodel.Anthropic, srv.Requests())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum, `user: text "run echo hello"`) || !strings.Contains(sum, `user: text "once more"`) ||
		strings.Index(sum, "The command printed: hello") > strings.LastIndex(sum, "once more") {
		t.Errorf("the second run did not carry the conversation on:\n%s", sum)
	}
}

func mustAnswers(t *testing.T, specs ...string) []fakemodel.Reply {
	t.Helper()
	as, err := fakemodel.ParseReplies(specs)
	if err != nil {
		t.Fatal(err)
	}
	return as
}
