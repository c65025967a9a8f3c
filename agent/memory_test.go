package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
)

// The project's memory files reach every request's system prompt, after the
// user's own addition, most general first; Memory lists them for /memory.
func TestMemoryJoinsTheSystemPrompt(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(modeltest.Answer("m1", "ok"), modeltest.Answer("m2", "ok"))
	files := []agent.MemoryFile{
		{Path: "/repo/AGENTS.md", Content: "Run make test before committing.\n"},
		{Path: "/repo/svc/CLAUDE.md", Content: "This service is written in Go."},
	}
	s := newSession(t, p, func(o *agent.Options) {
		o.SystemPrompt = "Answer in English."
		o.Memory = files
	})
	files[0].Content = "changed by the caller afterwards"
	for range 2 {
		if _, err := s.Run(context.Background(), "hello"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		sys := p.Request(i).System
		user := strings.Index(sys, "Answer in English.")
		a := strings.Index(sys, "Contents of /repo/AGENTS.md:\n\nRun make test before committing.")
		b := strings.Index(sys, "Contents of /repo/svc/CLAUDE.md:\n\nThis service is written in Go.")
		if user < 0 || a < user || b < a {
			t.Errorf("request %d: system prompt lacks the memory files in order:\n%s", i, sys)
		}
	}
	got := s.Memory()
	if len(got) != 2 || got[0].Path != "/repo/AGENTS.md" || got[1].Path != "/repo/svc/CLAUDE.md" {
		t.Errorf("Memory() = %+v", got)
	}
}
