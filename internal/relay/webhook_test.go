package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram"
	"github.com/sluicehq/sluice/internal/relay/store"
)

// natsServer is the package's one NATS server for the tests that start no
// cluster node (no sessions): started on first use, stopped by TestMain.
// A test whose processes run cluster nodes has a server of its own
// (natstest.URL): nodes of two tests on one server would be one cluster,
// each adopting the other test's sessions.
var natsServer struct {
	once sync.Once
	dir  string
	srv  *server.Server
	err  error
}

func natsURL(t *testing.T) string {
	t.Helper()
	natsServer.once.Do(func() {
		if natsServer.dir, natsServer.err = os.MkdirTemp("", "relay-nats"); natsServer.err == nil {
			natsServer.srv, natsServer.err = natstest.Start(natsServer.dir)
		}
	})
	if natsServer.err != nil {
		t.Fatal(natsServer.err)
	}
	return natsServer.srv.ClientURL()
}

func stopNATS() {
	if natsServer.srv != nil {
		natsServer.srv.Shutdown()
		natsServer.srv.WaitForShutdown()
	}
	if natsServer.dir != "" {
		os.RemoveAll(natsServer.dir)
	}
}

// TestWebhookForwarding: in a relay cluster a webhook update posted to a
// node that does not hold the channel is forwarded to the holder and
// acknowledged (200) only once the holder took it; with no holder, or a
// holder that refuses it (fenced), the platform is answered 503 and posts
// it again. The holder's own webhook takes updates itself.
func TestWebhookForwarding(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const account = "telegram/forwarding"
	holder := newForwarder(connect(), account, 5*time.Second)
	other := newForwarder(connect(), account, 5*time.Second)
	const secret = "s3cret"
	hooks := map[string]*httptest.Server{}
	for name, fw := range map[string]*forwarder{"holder": holder, "other": other} {
		hooks[name] = httptest.NewServer(telegram.WebhookHandler(secret, fw.accept))
		t.Cleanup(hooks[name].Close)
	}
	post := func(node string, update int, text string) int {
		t.Helper()
		body := `{"update_id": ` + strings.Repeat("1", update) + `, "message": {"message_id": 1, "text": "` + text + `", "chat": {"id": 5}}}`
		req, _ := http.NewRequest(http.MethodPost, hooks[node].URL, strings.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code := post("other", 1, "nobody holds"); code != http.StatusServiceUnavailable {
		t.Errorf("no holder: %d, want 503", code)
	}

	var mu sync.Mutex
	var took []channel.Inbound
	ctx, cancel := context.WithCancel(context.Background())
	serving := make(chan error, 1)
	go func() {
		serving <- holder.serve(ctx, func(_ context.Context, in channel.Inbound) error {
			if in.Text == "fenced" {
				return store.ErrFenced
			}
			mu.Lock()
			took = append(took, in)
			mu.Unlock()
			return nil
		})
	}()
	// Until the holder serves, the platform is told to try again — as
	// it would be, and as it does.
	wait := waitCtx(t)
	for post("other", 2, "forwarded") != http.StatusOK {
		select {
		case <-wait.Done():
			t.Fatal("the holder never took a forwarded update")
		case err := <-serving:
			t.Fatalf("the holder stopped serving: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if code := post("holder", 3, "direct"); code != http.StatusOK {
		t.Errorf("the holder's own webhook: %d", code)
	}
	if code := post("other", 4, "fenced"); code != http.StatusServiceUnavailable {
		t.Errorf("refused by the holder: %d, want 503", code)
	}
	cancel()
	if err := <-serving; err != context.Canceled {
		t.Errorf("serve: %v", err)
	}
	if code := post("other", 5, "after"); code != http.StatusServiceUnavailable {
		t.Errorf("after the holder stopped: %d, want 503", code)
	}
	if code := post("holder", 6, "after"); code != http.StatusServiceUnavailable {
		t.Errorf("the former holder's webhook: %d, want 503", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(took) != 2 || took[0].Text != "forwarded" || took[0].Key != "11" || took[0].Chat != "5" || took[1].Text != "direct" {
		t.Errorf("the holder took %+v", took)
	}
}

func TestInboundSubject(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ account, want string }{
		{"telegram/123456", "sluice.relay.telegram_123456.inbound"},
		{"wechat/bot.id*>x", "sluice.relay.wechat_bot_id__x.inbound"},
	} {
		if got := inboundSubject(tt.account); got != tt.want {
			t.Errorf("inboundSubject(%q) = %q, want %q", tt.account, got, tt.want)
		}
	}
}
