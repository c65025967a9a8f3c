package wechat

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat/wechatfake"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/store"
	"github.com/sluicehq/sluice/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// instantClock fires every timer at once: Login's one-second poll pacing
// does not decide anything the tests check.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Unix(0, 0) }
func (instantClock) NewTimer(time.Duration) model.Timer {
	ch := make(chan time.Time, 1)
	ch <- time.Unix(0, 0)
	return instantTimer(ch)
}

type instantTimer chan time.Time

func (t instantTimer) C() <-chan time.Time { return t }
func (instantTimer) Reset(time.Duration)   {}
func (instantTimer) Stop()                 {}

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
	k.m[key] = value
	return nil
}

func fakeServer(t *testing.T) (*wechatfake.Server, *httptest.Server) {
	t.Helper()
	f := wechatfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func TestLogin(t *testing.T) {
	t.Parallel()
	_, srv := fakeServer(t)
	var shown []string
	scanned := 0
	creds, err := Login(context.Background(), LoginConfig{
		BaseURL: srv.URL, Clock: instantClock{},
		Show:    func(content, term string) { shown = append(shown, content, term) },
		Scanned: func() { scanned++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if creds.Token != wechatfake.Token || creds.BotID != "bot@im.bot" || creds.UserID != "owner@im.wechat" {
		t.Errorf("credentials %+v", creds)
	}
	if len(shown) != 2 || shown[0] == "" || len(shown[1]) < 100 || scanned != 1 {
		t.Errorf("shown %d items, scanned %d times", len(shown), scanned)
	}

	path := filepath.Join(t.TempDir(), "wechat", "credentials.json")
	if err := SaveCredentials(path, creds); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credential file mode %v, %v", fi.Mode(), err)
	}
	back, err := LoadCredentials(path)
	if err != nil || back != creds {
		t.Errorf("loaded %+v, %v", back, err)
	}
}

func newClient(srv *httptest.Server, kv KV) *Client {
	return New(Config{BaseURL: srv.URL, Token: wechatfake.Token, BotID: "bot@im.bot", KV: kv, Clock: instantClock{}})
}

func TestReceiveAndReply(t *testing.T) {
	t.Parallel()
	f, srv := fakeServer(t)
	kv := &memKV{m: map[string]string{}}
	got := make(chan channel.Inbound, 10)
	receive := func(c *Client) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Receive(ctx, func(_ context.Context, in channel.Inbound) { got <- in })
		}()
		return func() { cancel(); <-done }
	}
	next := func() channel.Inbound {
		t.Helper()
		select {
		case in := <-got:
			return in
		case <-time.After(10 * time.Second):
			t.Fatal("no inbound message")
		}
		return channel.Inbound{}
	}

	c := newClient(srv, kv)
	stop := receive(c)
	f.UserSays("alice@im.wechat", "hello", "ctx-a")
	in := next()
	if in.Chat != "alice@im.wechat" || in.Text != "hello" || in.Key == "" {
		t.Fatalf("inbound %+v", in)
	}
	if err := c.Send(context.Background(), in.Chat, "hi there"); err != nil {
		t.Fatal(err)
	}
	if s := f.Sent(); len(s) != 1 || s[0].ContextToken != "ctx-a" || s[0].Text != "hi there" {
		t.Errorf("sent %+v", s)
	}
	stop()

	// A restart resumes after the saved cursor and still knows the
	// conversation's context token.
	c = newClient(srv, kv)
	stop = receive(c)
	defer stop()
	f.UserSays("alice@im.wechat", "second", "")
	if in := next(); in.Text != "second" {
		t.Fatalf("after restart got %+v, want only the new message", in)
	}
	if err := c.Send(context.Background(), "alice@im.wechat", "again"); err != nil {
		t.Fatal(err)
	}
	if s := f.Sent(); s[1].ContextToken != "ctx-a" {
		t.Errorf("context token after restart: %q", s[1].ContextToken)
	}
}

func TestReplayedMessagesHaveOneKey(t *testing.T) {
	t.Parallel()
	f, srv := fakeServer(t)
	f.ReplayFirst = true
	f.UserSays("bob", "once", "ctx")
	c := newClient(srv, &memKV{m: map[string]string{}})
	ctx, cancel := context.WithCancel(context.Background())
	var keys []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Receive(ctx, func(_ context.Context, in channel.Inbound) {
			keys = append(keys, in.Key)
			if len(keys) == 2 {
				cancel()
			}
		})
	}()
	<-done
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Errorf("keys %v: a replay must carry the same key", keys)
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code     int
		want     error
		notWants []error
	}{
		{-2, deliver.ErrThrottled, []error{deliver.ErrSessionExpired}},
		{-14, deliver.ErrSessionExpired, []error{deliver.ErrThrottled}},
		{0, nil, []error{deliver.ErrThrottled, deliver.ErrSessionExpired, deliver.ErrRefused}},
	}
	for _, tt := range tests {
		f, srv := fakeServer(t)
		f.FailSends(tt.code)
		err := newClient(srv, &memKV{m: map[string]string{}}).Send(context.Background(), "u", "x")
		if err == nil {
			t.Fatalf("code %d: no error", tt.code)
		}
		if tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("code %d: %v is not %v", tt.code, err, tt.want)
		}
		for _, nw := range tt.notWants {
			if errors.Is(err, nw) {
				t.Errorf("code %d: %v is %v", tt.code, err, nw)
			}
		}
	}
}

func TestSessionExpiredPausesPolling(t *testing.T) {
	t.Parallel()
	f, srv := fakeServer(t)
	f.Expire()
	expired := make(chan struct{}, 1)
	c := New(Config{BaseURL: srv.URL, Token: wechatfake.Token, KV: &memKV{m: map[string]string{}}, Clock: instantClock{},
		SessionExpired: func() {
			select {
			case expired <- struct{}{}:
			default:
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Receive(ctx, func(context.Context, channel.Inbound) {}) }()
	select {
	case <-expired:
	case <-time.After(10 * time.Second):
		t.Error("session expiry not reported")
	}
	cancel()
	<-done
}

func TestTyping(t *testing.T) {
	t.Parallel()
	f, srv := fakeServer(t)
	c := newClient(srv, &memKV{m: map[string]string{}})
	for _, on := range []bool{true, true, false} {
		if err := c.Typing(context.Background(), "carol", on); err != nil {
			t.Fatal(err)
		}
	}
	tp := f.Typings()
	if len(tp) != 3 || tp[0].Status != 1 || tp[2].Status != 2 || tp[0].To != "carol" {
		t.Errorf("typing calls %+v", tp)
	}
}
