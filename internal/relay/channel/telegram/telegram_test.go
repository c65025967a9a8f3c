package telegram

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

func setup(t *testing.T) (*telegramfake.Server, *httptest.Server) {
	t.Helper()
	f := telegramfake.New()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func client(srv *httptest.Server, kv KV, token string) *Client {
	return New(Config{BaseURL: srv.URL, Token: token, KV: kv, PollTimeout: time.Second})
}

func TestPollAndReply(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	kv := &memKV{m: map[string]string{}}
	got := make(chan channel.Inbound, 10)
	poll := func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			client(srv, kv, telegramfake.Token).Receive(ctx, func(_ context.Context, in channel.Inbound) { got <- in })
		}()
		return func() { cancel(); <-done }
	}
	next := func() channel.Inbound {
		t.Helper()
		select {
		case in := <-got:
			return in
		case <-time.After(10 * time.Second):
			t.Fatal("no update")
		}
		return channel.Inbound{}
	}
	stop := poll()
	f.UserSays(42, "hello")
	if in := next(); in.Chat != "42" || in.Text != "hello" {
		t.Fatalf("inbound %+v", in)
	}
	stop()
	stop = poll()
	defer stop()
	f.UserSays(42, "second")
	if in := next(); in.Text != "second" {
		t.Fatalf("after restart %+v, want only the new update", in)
	}
	c := client(srv, kv, telegramfake.Token)
	if err := c.Send(context.Background(), "42", "hi"); err != nil {
		t.Fatal(err)
	}
	if err := c.Typing(context.Background(), "42", true); err != nil {
		t.Fatal(err)
	}
	if s := f.Sent(); len(s) != 1 || s[0].ChatID != 42 || s[0].Text != "hi" {
		t.Errorf("sent %+v", s)
	}
	if a := f.Actions(); len(a) != 1 || a[0] != "typing" {
		t.Errorf("actions %v", a)
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := client(srv, &memKV{m: map[string]string{}}, telegramfake.Token)
	f.FailSends(telegramfake.Failure{Code: 429, RetryAfter: 7}, telegramfake.Failure{Code: 403}, telegramfake.Failure{Code: 500})

	err := c.Send(context.Background(), "1", "x")
	var te *deliver.ThrottleError
	if !errors.As(err, &te) || te.RetryAfter != 7*time.Second || !errors.Is(err, deliver.ErrThrottled) {
		t.Errorf("429: %v", err)
	}
	if err := c.Send(context.Background(), "1", "x"); !errors.Is(err, deliver.ErrRefused) {
		t.Errorf("403: %v", err)
	}
	err = c.Send(context.Background(), "1", "x")
	if err == nil || errors.Is(err, deliver.ErrRefused) || errors.Is(err, deliver.ErrThrottled) {
		t.Errorf("500 must be transient: %v", err)
	}

	bad := client(srv, &memKV{m: map[string]string{}}, "999:wrong")
	err = bad.Send(context.Background(), "1", "x")
	if !errors.Is(err, deliver.ErrSessionExpired) {
		t.Errorf("401: %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the token: %v", err)
	}
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	f, srv := setup(t)
	c := client(srv, &memKV{m: map[string]string{}}, telegramfake.Token)
	if err := c.SetWebhook(context.Background(), "https://example.test/hook", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if f.Webhook() != "https://example.test/hook" {
		t.Errorf("webhook %q", f.Webhook())
	}
	var got []channel.Inbound
	h := WebhookHandler("s3cret", func(_ context.Context, in channel.Inbound) error {
		if in.Text == "refused" {
			return errors.New("not now")
		}
		got = append(got, in)
		return nil
	})
	body := `{"update_id": 77, "message": {"message_id": 1, "text": "via hook", "chat": {"id": -100}}}`
	for _, tt := range []struct {
		secret string
		code   int
		body   string
	}{{"wrong", 403, body}, {"s3cret", 200, body}, {"s3cret", 503, strings.Replace(body, "via hook", "refused", 1)}} {
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(tt.body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", tt.secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("secret %q: %d, want %d", tt.secret, rec.Code, tt.code)
		}
	}
	if len(got) != 1 || got[0].Chat != "-100" || got[0].Key != "77" || got[0].Text != "via hook" {
		t.Errorf("got %+v", got)
	}
}
