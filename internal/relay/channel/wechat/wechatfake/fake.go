// Package wechatfake is a local WeChat bot ("iLink") API server for tests:
// it speaks the HTTP API that package wechat uses (QR login, getupdates,
// sendmessage, getconfig, sendtyping), lets a test play users who write to
// the bot, records what the bot sends, and fails on demand (ret -2,
// errcode -14, HTTP 500).
package wechatfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Token is the bot token the server issues and expects.
const Token = "fake-bot-token"

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	inbox    []json.RawMessage
	sent     []Sent
	typing   []Typing
	failures []int // ret codes for the next sendmessage calls (0: HTTP 500)
	expired  bool
	qrPolls  int
	nextID   int64
	// ReplayFirst makes getupdates deliver every message twice, as the
	// real server may (at least once).
	ReplayFirst bool
}

// Sent is a message the bot sent.
type Sent struct {
	To, Text, ContextToken string
}

// Typing is a sendtyping call.
type Typing struct {
	To     string
	Status int
}

// New returns a server with no messages.
func New() *Server { return &Server{changed: make(chan struct{})} }

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// UserSays queues a text message from user to the bot, in conversation
// contextToken.
func (s *Server) UserSays(user, text, contextToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	m, _ := json.Marshal(map[string]any{
		"seq": s.nextID, "message_id": 1000 + s.nextID, "from_user_id": user, "to_user_id": "bot@im.bot",
		"message_type": 1, "message_state": 2, "context_token": contextToken,
		"item_list": []any{map[string]any{"type": 1, "text_item": map[string]string{"text": text}}},
	})
	s.inbox = append(s.inbox, m)
	s.notifyLocked()
}

// FailSends makes the next sendmessage calls fail, one per code: a ret
// code (-2 throttled, -14 expired), or 0 for an HTTP 500.
func (s *Server) FailSends(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, codes...)
}

// Expire makes every authenticated call answer errcode -14 until Login.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expired = true
}

// Sent returns the messages sent so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Typings returns the sendtyping calls so far.
func (s *Server) Typings() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Typing(nil), s.typing...)
}

// WaitSent waits until at least n messages were sent and returns them.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	for {
		s.mu.Lock()
		if len(s.sent) >= n {
			out := append([]Sent(nil), s.sent...)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return s.Sent(), fmt.Errorf("wechatfake: %d messages sent, waited for %d: %w", len(s.Sent()), n, ctx.Err())
		case <-ch:
		}
	}
}

// ServeHTTP answers the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	switch path {
	case "ilink/bot/get_bot_qrcode":
		reply(w, map[string]any{"qrcode": "qr-1", "qrcode_img_content": "https://liteapp.weixin.qq.com/q/fake?qrcode=qr-1"})
		return
	case "ilink/bot/get_qrcode_status":
		s.mu.Lock()
		s.qrPolls++
		n := s.qrPolls
		s.expired = false
		s.mu.Unlock()
		switch {
		case r.URL.Query().Get("qrcode") != "qr-1":
			reply(w, map[string]any{"status": "expired"})
		case n == 1:
			reply(w, map[string]any{"status": "wait"})
		case n == 2:
			reply(w, map[string]any{"status": "scaned"})
		default:
			reply(w, map[string]any{"status": "confirmed", "bot_token": Token, "ilink_bot_id": "bot@im.bot", "ilink_user_id": "owner@im.wechat"})
		}
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+Token || r.Header.Get("AuthorizationType") != "ilink_bot_token" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var body struct {
		Cursor string `json:"get_updates_buf"`
		Msg    struct {
			To           string `json:"to_user_id"`
			ContextToken string `json:"context_token"`
			ItemList     []struct {
				Type     int `json:"type"`
				TextItem *struct {
					Text string `json:"text"`
				} `json:"text_item"`
			} `json:"item_list"`
			MessageType int `json:"message_type"`
		} `json:"msg"`
		User   string `json:"ilink_user_id"`
		Ticket string `json:"typing_ticket"`
		Status int    `json:"status"`
		Base   *struct {
			ChannelVersion string `json:"channel_version"`
		} `json:"base_info"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Base == nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	expired := s.expired
	s.mu.Unlock()
	if expired {
		reply(w, map[string]any{"ret": -14, "errcode": -14, "errmsg": "session expired"})
		return
	}
	switch path {
	case "ilink/bot/getupdates":
		s.getUpdates(w, r, body.Cursor)
	case "ilink/bot/sendmessage":
		s.mu.Lock()
		if len(s.failures) > 0 {
			code := s.failures[0]
			s.failures = s.failures[1:]
			s.mu.Unlock()
			if code == 0 {
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
			reply(w, map[string]any{"ret": code, "errmsg": "failure " + strconv.Itoa(code)})
			return
		}
		var text []string
		for _, it := range body.Msg.ItemList {
			if it.Type == 1 && it.TextItem != nil {
				text = append(text, it.TextItem.Text)
			}
		}
		if body.Msg.MessageType != 2 || len(text) != 1 {
			s.mu.Unlock()
			reply(w, map[string]any{"ret": -1, "errmsg": "want one text item from the bot"})
			return
		}
		s.sent = append(s.sent, Sent{To: body.Msg.To, Text: text[0], ContextToken: body.Msg.ContextToken})
		s.notifyLocked()
		s.mu.Unlock()
		reply(w, map[string]any{"ret": 0})
	case "ilink/bot/getconfig":
		reply(w, map[string]any{"ret": 0, "typing_ticket": "ticket-" + body.User})
	case "ilink/bot/sendtyping":
		if body.Ticket != "ticket-"+body.User {
			reply(w, map[string]any{"ret": -1, "errmsg": "bad ticket"})
			return
		}
		s.mu.Lock()
		s.typing = append(s.typing, Typing{To: body.User, Status: body.Status})
		s.notifyLocked()
		s.mu.Unlock()
		reply(w, map[string]any{"ret": 0})
	default:
		http.NotFound(w, r)
	}
}

// getUpdates answers the messages after the cursor ("c<N>": N delivered),
// holding the request until there is one or the client gives up.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, cursor string) {
	from, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
	for {
		s.mu.Lock()
		if len(s.inbox) > from {
			msgs := s.inbox[from:]
			if s.ReplayFirst {
				msgs = append(append([]json.RawMessage{}, msgs...), msgs...)
			}
			next := "c" + strconv.Itoa(len(s.inbox))
			s.mu.Unlock()
			reply(w, map[string]any{"ret": 0, "msgs": msgs, "get_updates_buf": next, "longpolling_timeout_ms": 35000})
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		}
	}
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
