package acp

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/model/modeltest"
)

// /rewind and /clear change the session under the client: each is told as
// an agent message with a _meta a sluice-aware client can act on, the
// context's usage shrinks, a cleared session is titled anew, and a load
// replays the conversation as it is now.
func TestClearAndRewindAreTold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, modeltest.NewScript(
		modeltest.Answer("m1", "one"), modeltest.Answer("m2", "two"), modeltest.Answer("m3", "three"),
	), harnessOpts{dir: dir})
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession().SessionId
	// since runs a prompt and returns the updates it caused.
	since := func(text string) []sdk.SessionNotification {
		t.Helper()
		n := len(h.client.snapshot())
		resp, err := h.prompt(id, text)
		if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
			t.Fatalf("prompt %q: %+v %v", text, resp, err)
		}
		return h.client.snapshot()[n:]
	}
	usedAfter := func(ups []sdk.SessionNotification) int {
		t.Helper()
		for i := len(ups) - 1; i >= 0; i-- {
			if u := ups[i].Update.UsageUpdate; u != nil {
				return u.Used
			}
		}
		t.Fatal("no usage_update")
		return 0
	}
	firstUsed := usedAfter(since("first"))
	since("second")

	ups := since("/rewind")
	if got := messageText(ups); got != rewoundNotice {
		t.Errorf("after /rewind the client is told %q", got)
	}
	if meta := noticeMeta(ups, "messagesRewound"); meta == nil || meta["anchorMessageId"] == "" {
		t.Errorf("rewind _meta = %v", meta)
	}
	if used := usedAfter(ups); used != firstUsed {
		t.Errorf("context used after the rewind = %d, want the first answer's %d", used, firstUsed)
	}

	ups = since("/clear")
	if got := messageText(ups); got != clearedNotice {
		t.Errorf("after /clear the client is told %q", got)
	}
	if noticeMeta(ups, "messagesCleared") == nil {
		t.Error("clear has no _meta")
	}
	if used := usedAfter(ups); used != 0 {
		t.Errorf("context used after the clear = %d", used)
	}
	titled := false
	for _, n := range since("third") {
		if u := n.Update.SessionInfoUpdate; u != nil && u.Title != nil && *u.Title == "third" {
			titled = true
		}
	}
	if !titled {
		t.Error("the first message after the clear does not title the session")
	}

	// A new process loading the session sees only what is left.
	h2 := newHarness(t, modeltest.NewScript(), harnessOpts{dir: dir})
	h2.initialize(sdk.ClientCapabilities{})
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h2.work(), McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replay := h2.client.snapshot()
	var user strings.Builder
	for _, n := range replay {
		if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
			user.WriteString(c.Content.Text.Text)
		}
	}
	if user.String() != "third" || messageText(replay) != "three" {
		t.Errorf("load replays user %q, agent %q; want only the exchange after the clear", user.String(), messageText(replay))
	}
}

// noticeMeta is _meta.sluice[key] of the first agent message chunk that has it.
func noticeMeta(ups []sdk.SessionNotification, key string) map[string]any {
	for _, n := range ups {
		c := n.Update.AgentMessageChunk
		if c == nil {
			continue
		}
		if sl, ok := c.Meta["sluice"].(map[string]any); ok {
			if m, ok := sl[key].(map[string]any); ok {
				return m
			}
		}
	}
	return nil
}
