package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/telegram"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
)

// platformTelegram is Telegram's Bot API: the token from
// TELEGRAM_BOT_TOKEN, updates by long polling or by webhook.
var platformTelegram = Platform{
	Name:           "telegram",
	Usage:          `  sluice relay telegram [flags]        relay Telegram chats (TELEGRAM_BOT_TOKEN)`,
	Limit:          split.TelegramLimit,
	Pacing:         deliver.TelegramPacing,
	DefaultBaseURL: telegram.DefaultBaseURL,
	Webhook:        true,
	open:           openTelegram,
}

func openTelegram(o *opening) (channel.Channel, error) {
	cfg := o.cfg
	token := os.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		return nil, errors.New("set TELEGRAM_BOT_TOKEN (from @BotFather)")
	}
	// The bot's id is the token's part before the colon (not secret).
	botID, _, _ := strings.Cut(token, ":")
	var ln net.Listener
	if cfg.WebhookURL != "" && cfg.Cluster != nil {
		// Every node serves the webhook for as long as it runs,
		// holding the channel or not: bound first, so that a node
		// that cannot listen fails at once.
		var err error
		if ln, err = net.Listen("tcp", cfg.WebhookListen); err != nil {
			return nil, fmt.Errorf("webhook: %w", err)
		}
		defer func() {
			if o.served == nil { // the start failed before serving it
				ln.Close()
			}
		}()
	}
	if err := o.openStore("telegram/" + botID); err != nil {
		return nil, err
	}
	tg := telegram.New(telegram.Config{BaseURL: cfg.BaseURL, Token: token, KV: o.st, Logger: o.log})
	if cfg.WebhookURL == "" {
		return tg, nil
	}
	secret := os.Getenv("TELEGRAM_WEBHOOK_SECRET")
	if secret == "" {
		return nil, errors.New("a webhook needs TELEGRAM_WEBHOOK_SECRET")
	}
	var ch channel.Channel
	if o.node != nil {
		fw := newForwarder(o.nc, "telegram/"+botID, 5*time.Second)
		o.ctx, o.stopServing = context.WithCancelCause(o.ctx)
		o.served = make(chan struct{})
		go func(ctx context.Context) {
			defer close(o.served)
			if err := serveWebhook(ctx, ln, telegram.WebhookHandler(secret, fw.accept)); err != nil {
				o.stopServing(err)
			}
		}(o.ctx)
		ch = &clusterWebhook{Client: tg, fw: fw}
	} else {
		ch = &webhookChannel{Client: tg, secret: secret, listen: cfg.WebhookListen, log: o.log}
	}
	if err := tg.SetWebhook(o.ctx, cfg.WebhookURL, secret); err != nil {
		return nil, err
	}
	return ch, nil
}

// webhookChannel receives Telegram updates on an HTTP server instead of
// long polling; sending is the client's.
type webhookChannel struct {
	*telegram.Client
	secret, listen string
	log            *slog.Logger
}

// Receive serves the webhook until ctx is done. It returns at once with
// the cause when it cannot listen, or when the server fails.
func (w *webhookChannel) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	return w.ReceiveAccepting(ctx, func(ctx context.Context, in channel.Inbound) error {
		handle(ctx, in)
		return nil
	})
}

// ReceiveAccepting is Receive, answering 503 for an update accept refused.
func (w *webhookChannel) ReceiveAccepting(ctx context.Context, accept func(context.Context, channel.Inbound) error) error {
	ln, err := net.Listen("tcp", w.listen)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	err = serveWebhook(ctx, ln, telegram.WebhookHandler(w.secret, func(_ context.Context, in channel.Inbound) error {
		// The request ends before the agent does: hand over the relay's
		// context, not the request's.
		return accept(ctx, in)
	}))
	if err != nil {
		return err
	}
	return ctx.Err()
}

// serveWebhook serves h on ln until ctx is done (then it shuts the server
// down, giving the requests in flight 5 s) or the server fails.
func serveWebhook(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serving, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-serving.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	err := srv.Serve(ln)
	stop()
	<-stopped
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}
