// Package telegramfake is a local Telegram Bot API server for tests: it
// answers getUpdates (long polling), deleteWebhook, setWebhook,
// sendMessage and sendChatAction for one bot token, lets a test play users,
// records what the bot sends, answers 429 with retry_after on demand and
// leaves sendMessage calls for a chat unanswered on demand.
package telegramfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Token is the bot token the server accepts.
const Token = "123456:fake-telegram-token"

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	changed  chan struct{}
	updates  []map[string]any
	sent     []Sent
	actions  []string
	failures []Failure
	webhook  string
	nextID   int64
	hangs    map[int64]int // chat → sendMessage calls still to leave unanswered
}

// Sent is a message the bot sent.
type Sent struct {
	ChatID int64
	Text   string
}

// Failure is an error answer for a sendMessage call.
type Failure struct {
	Code       int // 429, 403, 400, 500
	RetryAfter int // seconds, for 429
}

// New returns a server with no updates.
func New() *Server { return &Server{changed: make(chan struct{})} }

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// UserSays queues a text message in chat.
func (s *Server) UserSays(chat int64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.updates = append(s.updates, map[string]any{
		"update_id": 5000 + s.nextID,
		"message": map[string]any{
			"message_id": s.nextID, "date": 1700000000, "text": text,
			"chat": map[string]any{"id": chat, "type": "private"},
			"from": map[string]any{"id": chat, "is_bot": false, "first_name": "Test"},
		},
	})
	s.notifyLocked()
}

// FailSends makes the next sendMessage calls fail, in order.
func (s *Server) FailSends(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f...)
}

// HangSends leaves the next n sendMessage calls for chat unanswered until
// the client gives up (its request's context ends); the messages are not
// recorded as sent. It replaces an earlier count: 0 ends the hanging.
func (s *Server) HangSends(chat int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hangs == nil {
		s.hangs = map[int64]int{}
	}
	s.hangs[chat] = n
}

// Sent returns the messages sent so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Actions returns the chat actions sent so far.
func (s *Server) Actions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions...)
}

// Webhook returns the webhook URL set, if any.
func (s *Server) Webhook() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
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
			return s.Sent(), fmt.Errorf("telegramfake: %d messages sent, waited for %d: %w", len(s.Sent()), n, ctx.Err())
		case <-ch:
		}
	}
}

// ServeHTTP answers the Bot API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		answer(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	var p struct {
		Offset  int64  `json:"offset"`
		Timeout int    `json:"timeout"`
		ChatID  any    `json:"chat_id"`
		Text    string `json:"text"`
		Action  string `json:"action"`
		URL     string `json:"url"`
		Secret  string `json:"secret_token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		answer(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: bad JSON"})
		return
	}
	switch rest {
	case "getUpdates":
		s.getUpdates(w, r, p.Offset, time.Duration(p.Timeout)*time.Second)
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook = ""
		s.mu.Unlock()
		answer(w, 200, map[string]any{"ok": true, "result": true})
	case "setWebhook":
		s.mu.Lock()
		s.webhook = p.URL
		s.mu.Unlock()
		answer(w, 200, map[string]any{"ok": true, "result": true})
	case "sendMessage":
		chat, err := chatID(p.ChatID)
		if err != nil || p.Text == "" || len([]rune(p.Text)) > 4096 {
			answer(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: bad chat or text"})
			return
		}
		s.mu.Lock()
		if s.hangs[chat] > 0 {
			s.hangs[chat]--
			s.mu.Unlock()
			<-r.Context().Done()
			return
		}
		if len(s.failures) > 0 {
			f := s.failures[0]
			s.failures = s.failures[1:]
			s.mu.Unlock()
			body := map[string]any{"ok": false, "error_code": f.Code, "description": http.StatusText(f.Code)}
			if f.RetryAfter > 0 {
				body["description"] = fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter)
				body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
			}
			answer(w, f.Code, body)
			return
		}
		s.nextID++
		id := s.nextID
		s.sent = append(s.sent, Sent{ChatID: chat, Text: p.Text})
		s.notifyLocked()
		s.mu.Unlock()
		answer(w, 200, map[string]any{"ok": true, "result": map[string]any{"message_id": id, "text": p.Text}})
	case "sendChatAction":
		s.mu.Lock()
		s.actions = append(s.actions, p.Action)
		s.notifyLocked()
		s.mu.Unlock()
		answer(w, 200, map[string]any{"ok": true, "result": true})
	default:
		answer(w, 404, map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
	}
}

func chatID(v any) (int64, error) {
	switch v := v.(type) {
	case float64:
		return int64(v), nil
	case string:
		var n int64
		_, err := fmt.Sscan(v, &n)
		return n, err
	}
	return 0, fmt.Errorf("no chat_id")
}

// getUpdates answers the updates from offset on, holding the request up to
// timeout while there are none.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, offset int64, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	for {
		s.mu.Lock()
		if s.webhook != "" {
			s.mu.Unlock()
			answer(w, 409, map[string]any{"ok": false, "error_code": 409, "description": "Conflict: can't use getUpdates method while webhook is active"})
			return
		}
		var out []map[string]any
		for _, u := range s.updates {
			if u["update_id"].(int64) >= offset {
				out = append(out, u)
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if len(out) > 0 {
			answer(w, 200, map[string]any{"ok": true, "result": out})
			return
		}
		select {
		case <-ctx.Done():
			answer(w, 200, map[string]any{"ok": true, "result": []any{}})
			return
		case <-ch:
		}
	}
}

func answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
