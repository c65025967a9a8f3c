package wechat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/sluicehq/sluice/model"
)

// ErrLogin is returned when the QR-code login does not complete.
var ErrLogin = errors.New("wechat: login failed")

// Credentials are what a confirmed login gives. They are secrets: they go
// only to the credential file (SaveCredentials), never to logs.
type Credentials struct {
	Token   string `json:"bot_token"`
	BotID   string `json:"ilink_bot_id"`
	BaseURL string `json:"baseurl,omitempty"`
	// UserID is the WeChat user who scanned the code: the bot's owner.
	UserID string `json:"ilink_user_id,omitempty"`
}

// LoadCredentials reads a credential file.
func LoadCredentials(path string) (Credentials, error) {
	var c Credentials
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("wechat: credentials in %s: %w", path, err)
	}
	if c.Token == "" {
		return c, fmt.Errorf("wechat: credentials in %s have no token", path)
	}
	return c, nil
}

// SaveCredentials writes a credential file readable by its owner only,
// replacing it atomically.
func SaveCredentials(path string, c Credentials) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoginConfig configures Login.
type LoginConfig struct {
	BaseURL    string // default DefaultBaseURL
	HTTPClient *http.Client
	Clock      model.Clock
	// Show presents the QR code: its content (a URL to open or scan) and a
	// terminal rendering of it. Called again when the code is refreshed.
	Show func(content, terminal string)
	// Scanned is told once when the code was scanned.
	Scanned func()
	// Tokens are bot tokens issued before (at most ten are sent).
	Tokens []string
}

// Login runs the QR-code login: it fetches a code, shows it, and polls its
// status until the user confirms in WeChat (or ctx ends). An expired code
// is refreshed up to twice.
func Login(ctx context.Context, cfg LoginConfig) (Credentials, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Clock == nil {
		cfg.Clock = model.SystemClock
	}
	if len(cfg.Tokens) > 10 {
		cfg.Tokens = cfg.Tokens[len(cfg.Tokens)-10:]
	}
	pollBase := cfg.BaseURL
	code, err := fetchQR(ctx, cfg)
	if err != nil {
		return Credentials{}, err
	}
	refreshed, scanned := 0, false
	for {
		st, err := pollQR(ctx, cfg.HTTPClient, pollBase, code)
		if err != nil {
			if ctx.Err() != nil {
				return Credentials{}, ctx.Err()
			}
			// A gateway timeout of the long poll: keep waiting.
			st.Status = "wait"
		}
		switch st.Status {
		case "confirmed":
			if st.Token == "" || st.BotID == "" {
				return Credentials{}, fmt.Errorf("%w: confirmed without a token or bot id", ErrLogin)
			}
			return Credentials{Token: st.Token, BotID: st.BotID, BaseURL: st.BaseURL, UserID: st.UserID}, nil
		case "scaned":
			if !scanned && cfg.Scanned != nil {
				cfg.Scanned()
			}
			scanned = true
		case "scaned_but_redirect":
			if st.RedirectHost != "" {
				pollBase = "https://" + st.RedirectHost
			}
		case "expired":
			if refreshed++; refreshed > 2 {
				return Credentials{}, fmt.Errorf("%w: the QR code expired three times", ErrLogin)
			}
			if code, err = fetchQR(ctx, cfg); err != nil {
				return Credentials{}, err
			}
			scanned = false
		case "need_verifycode", "verify_code_blocked":
			return Credentials{}, fmt.Errorf("%w: WeChat asks for a verification code, which this login does not support yet; try again", ErrLogin)
		case "binded_redirect":
			return Credentials{}, fmt.Errorf("%w: this bot is already bound to another client", ErrLogin)
		}
		t := cfg.Clock.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return Credentials{}, ctx.Err()
		case <-t.C():
		}
	}
}

func fetchQR(ctx context.Context, cfg LoginConfig) (string, error) {
	body, _ := json.Marshal(map[string]any{"local_token_list": append([]string{}, cfg.Tokens...)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.BaseURL+"/ilink/bot/get_bot_qrcode?bot_type=3", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("iLink-App-Id", "bot")
	var qr struct {
		QRCode  string `json:"qrcode"`
		Content string `json:"qrcode_img_content"`
	}
	if err := do(cfg.HTTPClient, req, "get_bot_qrcode", &qr); err != nil {
		return "", fmt.Errorf("%w: %w", ErrLogin, err)
	}
	if qr.QRCode == "" {
		return "", fmt.Errorf("%w: no QR code in the answer", ErrLogin)
	}
	if cfg.Show != nil {
		content := qr.Content
		if content == "" {
			content = qr.QRCode
		}
		term := ""
		if q, err := qrcode.New(content, qrcode.Low); err == nil {
			term = q.ToSmallString(false)
		}
		cfg.Show(content, term)
	}
	return qr.QRCode, nil
}

type qrStatus struct {
	Status       string `json:"status"`
	Token        string `json:"bot_token"`
	BotID        string `json:"ilink_bot_id"`
	BaseURL      string `json:"baseurl"`
	UserID       string `json:"ilink_user_id"`
	RedirectHost string `json:"redirect_host"`
}

func pollQR(ctx context.Context, hc *http.Client, baseURL, code string) (qrStatus, error) {
	var st qrStatus
	pctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, baseURL+"/ilink/bot/get_qrcode_status?qrcode="+url.QueryEscape(code), nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("iLink-App-Id", "bot")
	err = do(hc, req, "get_qrcode_status", &st)
	return st, err
}
