package rpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// TestGoHostDrivesTheBinary is issue 4's "done when": a Go program using
// package client drives `sluice rpc` through a tool-using session, kills
// the process, restores the session in a new one, rewinds and compacts it,
// its list equal to getMessages all along.
func TestGoHostDrivesTheBinary(t *testing.T) {
	sluiceBin := testbin.Sluice(t)
	t.Parallel()
	fake := fakemodel.NewEcho()
	defer fake.Close()
	work, home := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func() (*client.Client, *exec.Cmd) {
		cmd := exec.Command(sluiceBin, "rpc", "--provider", "anthropic")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SLUICE_HOME="+home, "HOME="+home, "ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=test-key-not-secret")
		c, err := client.Start(ctx, cmd, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, cmd
	}
	same := func(s *client.Session) {
		t.Helper()
		host := s.Messages()
		srv, err := s.GetMessages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := json.Marshal(host)
		g, _ := json.Marshal(srv)
		if !bytes.Equal(h, g) {
			t.Fatalf("host list differs from getMessages\nhost %s\n srv %s", h, g)
		}
	}
	approve := func(s *client.Session) {
		drainCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				u, err := s.Next(drainCtx)
				if err != nil {
					return
				}
				if pr, ok := u.Event.(protocol.PermissionRequest); ok {
					go s.AnswerPermission(drainCtx, pr.RequestID, protocol.DecisionAllow)
				}
			}
		}()
		t.Cleanup(func() { stop(); <-done })
	}

	c, cmd := start()
	sess, err := c.Initialize(ctx, wire.InitializeParams{PermissionMode: "default"})
	if err != nil {
		t.Fatal(err)
	}
	approve(sess)
	first, err := sess.Run(ctx, "tool:echo from-the-binary")
	if err != nil {
		t.Fatal(err)
	}
	msgs := sess.Messages().Messages
	if len(msgs) != 3 || !strings.Contains(msgs[1].Blocks[1].Result, "from-the-binary") || msgs[2].Text() != "Done." {
		t.Fatalf("after the tool run: %+v", msgs)
	}
	same(sess)
	second, err := sess.Run(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	same(sess)
	before := sess.Messages()

	// Kill the process: no clean shutdown.
	cmd.Process.Kill()
	<-c.Done()
	cmd.Wait()

	c2, _ := start()
	defer c2.Close()
	restored, err := c2.RestoreSession(ctx, sess.ID(), work)
	if err != nil {
		t.Fatal(err)
	}
	approve(restored)
	got, _ := json.Marshal(restored.Messages().Messages)
	want, _ := json.Marshal(before.Messages)
	if !bytes.Equal(got, want) {
		t.Fatalf("restored list\n got %s\nwant %s", got, want)
	}

	// Rewind to the second message: the list is cut by messagesRewound.
	res, err := restored.Rewind(ctx, second)
	if err != nil || !res.OK {
		t.Fatalf("rewind: %+v %v", res, err)
	}
	if n := len(restored.Messages().Messages); n != 3 {
		t.Fatalf("%d messages after the rewind", n)
	}
	same(restored)

	// Compact: the summary is appended.
	if err := restored.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	msgs = restored.Messages().Messages
	if len(msgs) != 4 || msgs[3].Blocks[0].Type != protocol.BlockCompact {
		t.Fatalf("after compaction: %+v", msgs)
	}
	same(restored)
	if _, err := restored.Run(ctx, "after compaction"); err != nil {
		t.Fatal(err)
	}
	same(restored)
	if restored.Messages().Messages[0].ID != first {
		t.Fatal("the first message was lost")
	}
}
