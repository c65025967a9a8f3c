// Package telegram is the relay's Telegram channel: a client of the Bot API
// (https://core.telegram.org/bots/api) — getUpdates long polling or a
// webhook, sendMessage, sendChatAction — with 429's retry_after and the
// other failures mapped to package deliver's errors.
package telegram

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/model"
)

// DefaultBaseURL is the Bot API's address.
const DefaultBaseURL = "https://api.telegram.org"

// KV keeps the update offset across restarts (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Config configures a client.
type Config struct {
	BaseURL    string // default DefaultBaseURL
	Token      string // the bot token from @BotFather
	KV         KV     // required
	HTTPClient *http.Client
	Clock      model.Clock
	Logger     *slog.Logger
	// PollTimeout is getUpdates' timeout (default 50 s).
	PollTimeout time.Duration
}

// Client talks to the Bot API. It is safe for concurrent use.
type Client struct{ cfg Config }

// New returns a client.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Clock == nil {
		cfg.Clock = model.SystemClock
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 50 * time.Second
	}
	return &Client{cfg: cfg}
}

// Name is the channel's name.
func (c *Client) Name() string { return "telegram" }

// Limit is Telegram's message length limit in UTF-16 units.
func (c *Client) Limit() int { return split.TelegramLimit }

// APIError is an answer with ok false.
type APIError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// Is maps the Bot API's codes to package deliver's errors: 429 is
// throttling; 401 a revoked token; 403 (blocked by the user) and 400 (chat
// not found and the like) a chat that refuses messages.
func (e *APIError) Is(target error) bool {
	switch target {
	case deliver.ErrThrottled:
		return e.Code == http.StatusTooManyRequests
	case deliver.ErrSessionExpired:
		return e.Code == http.StatusUnauthorized
	case deliver.ErrRefused:
		return e.Code == http.StatusForbidden || e.Code == http.StatusBadRequest
	}
	return false
}

type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call invokes a method. Errors never contain the URL: it holds the token.
func (c *Client) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+"/bot"+c.cfg.Token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: bad base URL", method)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) {
			err = uerr.Unwrap() // drop the *url.Error and its URL
		}
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	var r apiResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("telegram %s: HTTP %d, not a Bot API answer", method, resp.StatusCode)
	}
	if !r.OK {
		e := &APIError{Method: method, Code: r.ErrorCode, Description: r.Description}
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if r.Parameters != nil {
			e.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		}
		if errors.Is(e, deliver.ErrThrottled) {
			return &deliver.ThrottleError{RetryAfter: e.RetryAfter, Err: e}
		}
		return e
	}
	if out != nil {
		return json.Unmarshal(r.Result, out)
	}
	return nil
}

// Send sends text to a chat as plain text (no parse mode: a model's
// markdown would need escaping to survive MarkdownV2).
func (c *Client) Send(ctx context.Context, chat, text string) error {
	return c.call(ctx, "sendMessage", map[string]any{"chat_id": chat, "text": text}, nil)
}

// Typing shows the typing indicator for about five seconds; Telegram has
// no call to cancel it, so on false does nothing.
func (c *Client) Typing(ctx context.Context, chat string, on bool) error {
	if !on {
		return nil
	}
	return c.call(ctx, "sendChatAction", map[string]any{"chat_id": chat, "action": "typing"}, nil)
}

type update struct {
	UpdateID int64 `json:"update_id"`
	Message  *struct {
		Text string `json:"text"`
		Chat struct {
			ID int64 `json:"id"`
		} `json:"chat"`
	} `json:"message"`
}

func (u update) inbound() (channel.Inbound, bool) {
	if u.Message == nil || u.Message.Text == "" {
		return channel.Inbound{}, false
	}
	return channel.Inbound{Chat: strconv.FormatInt(u.Message.Chat.ID, 10), Text: u.Message.Text, Key: strconv.FormatInt(u.UpdateID, 10)}, true
}

const offsetKey = "telegram/offset"

// Receive long-polls getUpdates and calls handle with each text message,
// in order, until ctx is done; the offset is saved after the updates it
// confirms were handled. It first removes a webhook, which would make
// getUpdates fail. It returns ctx's error, or an *APIError when the Bot
// API refuses the token (401, or 404 for a token it does not know): no
// retry can help then.
func (c *Client) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	if err := c.call(ctx, "deleteWebhook", map[string]any{}, nil); err != nil && ctx.Err() == nil {
		c.cfg.Logger.Warn("relay: Telegram deleteWebhook failed", "err", err)
	}
	var offset int64
	if v, err := c.cfg.KV.Get(ctx, offsetKey); err == nil {
		offset, _ = strconv.ParseInt(v, 10, 64)
	}
	failures := 0
	for ctx.Err() == nil {
		var ups []update
		pctx, cancel := context.WithTimeout(ctx, c.cfg.PollTimeout+10*time.Second)
		err := c.call(pctx, "getUpdates", map[string]any{
			"offset": offset, "timeout": int(c.cfg.PollTimeout / time.Second), "allowed_updates": []string{"message"},
		}, &ups)
		cancel()
		if ctx.Err() != nil {
			break
		}
		if fatal(err) {
			return err
		}
		if err != nil {
			failures++
			wait := min(time.Duration(failures)*2*time.Second, 30*time.Second)
			var te *deliver.ThrottleError
			if errors.As(err, &te) && te.RetryAfter > wait {
				wait = te.RetryAfter
			}
			c.cfg.Logger.Warn("relay: Telegram getUpdates failed", "err", err, "retry_in", wait)
			c.sleep(ctx, wait)
			continue
		}
		failures = 0
		for _, u := range ups {
			if in, ok := u.inbound(); ok {
				handle(ctx, in)
			}
			offset = max(offset, u.UpdateID+1)
		}
		if len(ups) > 0 {
			if err := c.cfg.KV.Put(ctx, offsetKey, strconv.FormatInt(offset, 10)); err != nil {
				c.cfg.Logger.Error("relay: cannot save the Telegram offset", "err", err)
			}
		}
	}
	return ctx.Err()
}

// fatal reports whether err means the bot cannot use the API at all.
func fatal(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound)
}

// SetWebhook asks Telegram to post updates to url, with secret in the
// X-Telegram-Bot-Api-Secret-Token header of each.
func (c *Client) SetWebhook(ctx context.Context, url, secret string) error {
	return c.call(ctx, "setWebhook", map[string]any{"url": url, "secret_token": secret, "allowed_updates": []string{"message"}}, nil)
}

// WebhookHandler serves the updates Telegram posts, calling accept for each
// text message. Requests without the secret are refused. An update accept
// refuses is answered 503, and Telegram posts it again later.
func WebhookHandler(secret string, accept func(context.Context, channel.Inbound) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		var u update
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&u); err != nil {
			http.Error(w, "bad update", http.StatusBadRequest)
			return
		}
		if in, ok := u.inbound(); ok {
			if err := accept(r.Context(), in); err != nil {
				http.Error(w, "not taken, try again", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}

func (c *Client) sleep(ctx context.Context, d time.Duration) {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

var _ channel.Channel = (*Client)(nil)
