// Package wechat is the relay's WeChat channel: a client of the WeChat bot
// ("iLink") HTTP API as documented in Tencent/openclaw-weixin
// (docs/protocol.md): QR-code login, the getupdates long poll with its
// cursor, sendmessage with the conversation's context_token,
// getconfig/sendtyping for the typing indicator.
//
// Errors map to package deliver's: ret -2 is throttling, errcode -14 an
// expired session. The long poll pauses after an expired session (the bot
// must log in again) and backs off after failures, on the injected clock.
package wechat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/model"
)

// DefaultBaseURL is the API's public address.
const DefaultBaseURL = "https://ilinkai.weixin.qq.com"

// Application error codes.
const (
	retThrottled   = -2
	sessionExpired = -14
)

// Message item and message types of the API.
const (
	itemText    = 1
	itemVoice   = 3
	messageUser = 1
	messageBot  = 2
	stateFinish = 2
	typingOn    = 1
	typingOff   = 2
)

// KV keeps small state across restarts (the relay's store).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// Config configures a client.
type Config struct {
	BaseURL string // default DefaultBaseURL
	Token   string // the bot token from login
	BotID   string // the bot account (ilink_bot_id), for de-duplication keys
	// KV persists the cursor and the context tokens. Required.
	KV         KV
	HTTPClient *http.Client
	Clock      model.Clock
	Logger     *slog.Logger
	// LongPoll is the client-side timeout of one getupdates (default 35 s;
	// the server may suggest another).
	LongPoll time.Duration
	// SessionPause is how long polling stops after an expired session
	// (default one hour, as the official plugin).
	SessionPause time.Duration
	// SessionExpired is called when the server says the session expired.
	SessionExpired func()
}

// Client talks to the API. It is safe for concurrent use.
type Client struct {
	cfg Config

	mu      sync.Mutex
	context map[string]string // chat → last context_token
	tickets map[string]string // chat → typing ticket
}

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
	if cfg.LongPoll <= 0 {
		cfg.LongPoll = 35 * time.Second
	}
	if cfg.SessionPause <= 0 {
		cfg.SessionPause = time.Hour
	}
	return &Client{cfg: cfg, context: map[string]string{}, tickets: map[string]string{}}
}

// Name is the channel's name.
func (c *Client) Name() string { return "wechat" }

// Limit is WeChat's message length limit in UTF-16 units.
func (c *Client) Limit() int { return split.WeChatLimit }

// APIError is a non-zero ret or errcode.
type APIError struct {
	Op      string
	Ret     int
	ErrCode int
	ErrMsg  string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("wechat %s: ret %d errcode %d: %s", e.Op, e.Ret, e.ErrCode, e.ErrMsg)
}

// Is maps the API's codes to package deliver's errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case deliver.ErrThrottled:
		return e.Ret == retThrottled || e.ErrCode == retThrottled
	case deliver.ErrSessionExpired:
		return e.Ret == sessionExpired || e.ErrCode == sessionExpired
	}
	return false
}

type baseInfo struct {
	ChannelVersion string `json:"channel_version"`
	BotAgent       string `json:"bot_agent"`
}

var base = baseInfo{ChannelVersion: "1.0.0", BotAgent: "sluice/1.0"}

type status struct {
	Ret     int    `json:"ret"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

func (s status) err(op string) error {
	if s.Ret == 0 && s.ErrCode == 0 {
		return nil
	}
	return &APIError{Op: op, Ret: s.Ret, ErrCode: s.ErrCode, ErrMsg: s.ErrMsg}
}

// post sends an authenticated JSON request and decodes the answer into out.
func (c *Client) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+"/"+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("AuthorizationType", "ilink_bot_token")
	req.Header.Set("X-WECHAT-UIN", randomUIN())
	req.Header.Set("iLink-App-Id", "bot")
	req.Header.Set("iLink-App-ClientVersion", strconv.Itoa(1<<16))
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	return do(c.cfg.HTTPClient, req, path, out)
}

// do runs req and decodes a 2xx JSON answer. The body of an error is
// quoted shortened: it may echo the request, never the token (which is
// only in a header).
func do(hc *http.Client, req *http.Request, op string, out any) error {
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("wechat %s: %w", op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("wechat %s: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("wechat %s: HTTP %d: %.200s", op, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("wechat %s: bad answer: %w", op, err)
	}
	return nil
}

func randomUIN() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString([]byte(strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10)))
}

type textItem struct {
	Text string `json:"text"`
}

type voiceItem struct {
	Text string `json:"text,omitempty"`
}

type messageItem struct {
	Type      int        `json:"type"`
	TextItem  *textItem  `json:"text_item,omitempty"`
	VoiceItem *voiceItem `json:"voice_item,omitempty"`
}

type message struct {
	Seq          int64         `json:"seq,omitempty"`
	MessageID    int64         `json:"message_id,omitempty"`
	FromUserID   string        `json:"from_user_id"`
	ToUserID     string        `json:"to_user_id"`
	ClientID     string        `json:"client_id,omitempty"`
	CreateTimeMs int64         `json:"create_time_ms,omitempty"`
	MessageType  int           `json:"message_type,omitempty"`
	MessageState int           `json:"message_state,omitempty"`
	ItemList     []messageItem `json:"item_list,omitempty"`
	ContextToken string        `json:"context_token,omitempty"`
}

// Send sends text to a user, in the conversation of their last message.
func (c *Client) Send(ctx context.Context, chat, text string) error {
	c.mu.Lock()
	token := c.context[chat]
	c.mu.Unlock()
	if token == "" {
		token = c.loadContext(ctx, chat)
	}
	var st status
	err := c.post(ctx, "ilink/bot/sendmessage", map[string]any{
		"msg": message{
			ToUserID:     chat,
			ClientID:     "sluice-" + randomHex(8),
			MessageType:  messageBot,
			MessageState: stateFinish,
			ItemList:     []messageItem{{Type: itemText, TextItem: &textItem{Text: text}}},
			ContextToken: token,
		},
		"base_info": base,
	}, &st)
	if err != nil {
		return err
	}
	return st.err("sendmessage")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Client) loadContext(ctx context.Context, chat string) string {
	v, err := c.cfg.KV.Get(ctx, "wechat/context/"+chat)
	if err != nil {
		return ""
	}
	c.mu.Lock()
	c.context[chat] = v
	c.mu.Unlock()
	return v
}

// Typing shows (on) or cancels the typing indicator in a chat. The typing
// ticket comes from getconfig, once per chat.
func (c *Client) Typing(ctx context.Context, chat string, on bool) error {
	c.mu.Lock()
	ticket, token := c.tickets[chat], c.context[chat]
	c.mu.Unlock()
	if ticket == "" {
		var cfg struct {
			status
			TypingTicket string `json:"typing_ticket"`
		}
		if err := c.post(ctx, "ilink/bot/getconfig", map[string]any{
			"ilink_user_id": chat, "context_token": token, "base_info": base,
		}, &cfg); err != nil {
			return err
		}
		if err := cfg.err("getconfig"); err != nil {
			return err
		}
		ticket = cfg.TypingTicket
		c.mu.Lock()
		c.tickets[chat] = ticket
		c.mu.Unlock()
	}
	st := typingOn
	if !on {
		st = typingOff
	}
	var s status
	if err := c.post(ctx, "ilink/bot/sendtyping", map[string]any{
		"ilink_user_id": chat, "typing_ticket": ticket, "status": st, "base_info": base,
	}, &s); err != nil {
		return err
	}
	return s.err("sendtyping")
}

const cursorKey = "wechat/cursor"

// Receive long-polls getupdates and calls handle with each user's text
// message, in order, until ctx is done. The cursor is saved after the
// messages it covers were handled, so a crash replays rather than loses
// them (the relay de-duplicates by Key). It returns ctx's error.
func (c *Client) Receive(ctx context.Context, handle func(context.Context, channel.Inbound)) error {
	cursor, err := c.cfg.KV.Get(ctx, cursorKey)
	if err != nil {
		cursor = ""
	}
	timeout := c.cfg.LongPoll
	failures := 0
	for ctx.Err() == nil {
		var resp struct {
			status
			Msgs          []message `json:"msgs"`
			Cursor        string    `json:"get_updates_buf"`
			LongPollingMs int64     `json:"longpolling_timeout_ms"`
		}
		pctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
		err := c.post(pctx, "ilink/bot/getupdates", map[string]any{"get_updates_buf": cursor, "base_info": base}, &resp)
		cancel()
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			err = resp.err("getupdates")
		}
		if errors.Is(err, deliver.ErrSessionExpired) {
			c.cfg.Logger.Error("relay: WeChat session expired; log in again with 'sluice relay wechat login'", "pause", c.cfg.SessionPause)
			if c.cfg.SessionExpired != nil {
				c.cfg.SessionExpired()
			}
			c.sleep(ctx, c.cfg.SessionPause)
			continue
		}
		if err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
			// The client-side timeout of a long poll is normal.
			continue
		}
		if err != nil {
			failures++
			wait := 2 * time.Second
			if failures >= 3 {
				wait, failures = 30*time.Second, 0
			}
			c.cfg.Logger.Warn("relay: WeChat getupdates failed", "err", err, "retry_in", wait)
			c.sleep(ctx, wait)
			continue
		}
		failures = 0
		if resp.LongPollingMs > 0 {
			timeout = time.Duration(resp.LongPollingMs) * time.Millisecond
		}
		for _, m := range resp.Msgs {
			c.receive(ctx, m, handle)
		}
		if resp.Cursor != "" && resp.Cursor != cursor {
			cursor = resp.Cursor
			if err := c.cfg.KV.Put(ctx, cursorKey, cursor); err != nil {
				c.cfg.Logger.Error("relay: cannot save the WeChat cursor", "err", err)
			}
		}
	}
	return ctx.Err()
}

func (c *Client) receive(ctx context.Context, m message, handle func(context.Context, channel.Inbound)) {
	if m.MessageType == messageBot || m.FromUserID == "" {
		return
	}
	if m.ContextToken != "" {
		c.mu.Lock()
		changed := c.context[m.FromUserID] != m.ContextToken
		c.context[m.FromUserID] = m.ContextToken
		c.mu.Unlock()
		if changed {
			if err := c.cfg.KV.Put(ctx, "wechat/context/"+m.FromUserID, m.ContextToken); err != nil {
				c.cfg.Logger.Error("relay: cannot save a WeChat context token", "err", err)
			}
		}
	}
	var text []string
	for _, it := range m.ItemList {
		switch {
		case it.Type == itemText && it.TextItem != nil:
			text = append(text, it.TextItem.Text)
		case it.Type == itemVoice && it.VoiceItem != nil && it.VoiceItem.Text != "":
			// A voice message's transcript.
			text = append(text, it.VoiceItem.Text)
		}
	}
	if len(text) == 0 {
		return
	}
	handle(ctx, channel.Inbound{Chat: m.FromUserID, Text: strings.Join(text, "\n"), Key: dedupeKey(c.cfg.BotID, m)})
}

// dedupeKey identifies an inbound message as the official plugin does:
// by message id, else client id, else seq, else content and time.
func dedupeKey(bot string, m message) string {
	switch {
	case m.MessageID != 0:
		return fmt.Sprintf("%s:%s:mid:%d", bot, m.FromUserID, m.MessageID)
	case m.ClientID != "":
		return fmt.Sprintf("%s:%s:cid:%s", bot, m.FromUserID, m.ClientID)
	case m.Seq != 0:
		return fmt.Sprintf("%s:%s:seq:%d", bot, m.FromUserID, m.Seq)
	}
	var b strings.Builder
	for _, it := range m.ItemList {
		if it.TextItem != nil {
			b.WriteString(it.TextItem.Text)
		}
	}
	return fmt.Sprintf("%s:%s:body:%d:%s", bot, m.FromUserID, m.CreateTimeMs, b.String())
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
