package printmode

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// With stream-json input, a message that arrives while a run is going goes
// to the session at once: during a tool round it joins the run at its next
// model request (one run, one result); during the run's last response it
// runs next, with its own result after the first's.
func TestStreamJSONSteering(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		first   [][]modeltest.Step // the first message's responses; gated at the first
		then    []modeltest.Step   // the second message's own run, if it gets one
		results []string
		// last is the text of the last message of the model's second
		// request: the steered message, or the second message's own.
		last string
	}{
		{
			name: "during a tool round",
			first: [][]modeltest.Step{
				modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Glob", map[string]any{"pattern": "*.go"}), modeltest.Stop("tool_use")),
				modeltest.Answer("m2", "Only the tests."),
			},
			results: []string{"Only the tests."},
			last:    "only the tests",
		},
		{
			name:    "during the last response",
			first:   [][]modeltest.Step{modeltest.Answer("m1", "All files.")},
			then:    modeltest.Answer("m2", "Only the tests."),
			results: []string{"All files.", "Only the tests."},
			last:    "only the tests",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gate := make(chan struct{})
			responses := [][]modeltest.Step{append(modeltest.Gate(gate), tt.first[0]...)}
			responses = append(responses, tt.first[1:]...)
			if tt.then != nil {
				responses = append(responses, tt.then)
			}
			p := modeltest.NewScript(responses...)
			sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions()})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			in, stdin := io.Pipe()
			var stdout, stderr syncBuffer
			code := make(chan int, 1)
			go func() {
				code <- Run(context.Background(), sess, "", Config{
					OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON,
					Stdin: in, Stdout: &stdout, Stderr: &stderr,
				})
			}()
			write := func(text string) {
				t.Helper()
				if _, err := io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"`+text+`"}}`+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			write("find the Go files")
			waitUntil(t, "the first request", func() bool { return p.Count() == 1 })
			write("only the tests")
			waitUntil(t, "the second message queued", func() bool {
				q := sess.Messages().Queued
				return len(q) == 1 && q[0].Kind == protocol.QueueMessage && q[0].Text == "only the tests"
			})
			close(gate)
			waitUntil(t, "the results", func() bool { return strings.Count(stdout.String(), `{"type":"result"`) == len(tt.results) })
			stdin.Close()
			if c := <-code; c != 0 {
				t.Fatalf("exit %d: %s", c, stderr.String())
			}
			var results []string
			var kinds []string
			for _, l := range lines(t, stdout.String()) {
				kinds = append(kinds, l["type"].(string))
				if l["type"] == "result" {
					results = append(results, l["result"].(string))
					if l["is_error"] != false {
						t.Errorf("result %v", l)
					}
				}
			}
			if strings.Join(results, "|") != strings.Join(tt.results, "|") {
				t.Errorf("results %q, want %q (lines %q)", results, tt.results, kinds)
			}
			// Every result line ends its run: the last line is a result, and
			// each run after the first starts with system/init.
			if kinds[len(kinds)-1] != "result" || strings.Count(strings.Join(kinds, " "), "system") != len(tt.results) {
				t.Errorf("lines %q", kinds)
			}
			if n := p.Count(); n != 2 {
				t.Fatalf("%d model requests, want 2", n)
			}
			msgs := p.Request(1).Messages
			last := msgs[len(msgs)-1]
			if last.Role != model.RoleUser || last.Content[0].Text != tt.last {
				t.Errorf("the second request ends with %+v", last)
			}
			if tt.then == nil {
				if prev := msgs[len(msgs)-2]; prev.Content[0].Type != model.ContentToolResult {
					t.Errorf("the steered message does not follow the tool result: %+v", prev)
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitUntil polls cond; the bound only turns a hang into a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The SDK's interrupt ends the turn in progress, and its receipt lists
// the uuids of the host's messages that still run (interrupt_receipt_v1):
// a message queued behind the turn runs next, with its own result.
func TestInterruptKeepsQueuedMessages(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Working"), modeltest.Gate(gate), modeltest.Stop("end_turn")),
		modeltest.Answer("m2", "Only the tests."),
	)
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	in, stdin := io.Pipe()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Run(context.Background(), sess, "", Config{
			OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON, Stdin: in, Stdout: &stdout, Stderr: &stderr,
		})
	}()
	io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"find the Go files"},"uuid":"u-1"}`+"\n")
	waitUntil(t, "the first request", func() bool { return p.Count() == 1 })
	io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"only the tests"},"uuid":"u-2"}`+"\n")
	waitUntil(t, "the second message queued", func() bool { return len(sess.Messages().Queued) == 1 })
	io.WriteString(stdin, `{"type":"control_request","request_id":"i1","request":{"subtype":"interrupt"}}`+"\n")
	waitUntil(t, "both results", func() bool { return strings.Count(stdout.String(), `{"type":"result"`) == 2 })
	stdin.Close()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	var results []string
	receipt := ""
	for _, l := range lines(t, stdout.String()) {
		switch l["type"] {
		case "result":
			r, _ := l["result"].(string) // absent after the interrupt, as in Claude Code
			results = append(results, l["subtype"].(string)+":"+r)
		case "control_response":
			r := l["response"].(map[string]any)
			if r["request_id"] == "i1" {
				b, _ := json.Marshal(r["response"])
				receipt = string(b)
			}
		}
	}
	if receipt != `{"still_queued":["u-2"]}` {
		t.Errorf("interrupt receipt %s, want u-2 still queued", receipt)
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "error_during_execution:") || results[1] != "success:Only the tests." {
		t.Errorf("results %q", results)
	}
}
