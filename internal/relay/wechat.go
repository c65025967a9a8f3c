package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/channel/wechat"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/split"
)

// platformWeChat is WeChat's bot API: a bot logged in by scanning a QR
// code, its owner allowed by default.
var platformWeChat = Platform{
	Name: "wechat",
	Usage: `  sluice relay wechat [flags]          relay WeChat chats to the agent
  sluice relay wechat login [flags]    log the WeChat bot in (QR code)`,
	Limit:          split.WeChatLimit,
	Pacing:         deliver.WeChatPacing,
	DefaultBaseURL: wechat.DefaultBaseURL,
	Login: func(ctx context.Context, stateDir, baseURL string, out io.Writer) error {
		_, err := login(ctx, stateDir, baseURL, out)
		return err
	},
	open: openWeChat,
}

func credentialsPath(stateDir string) string {
	return filepath.Join(stateDir, "wechat-credentials.json")
}

func login(ctx context.Context, stateDir, baseURL string, out io.Writer) (wechat.Credentials, error) {
	var tokens []string
	if old, err := wechat.LoadCredentials(credentialsPath(stateDir)); err == nil {
		tokens = append(tokens, old.Token)
	}
	creds, err := wechat.Login(ctx, wechat.LoginConfig{
		BaseURL: baseURL,
		Tokens:  tokens,
		Show: func(content, term string) {
			fmt.Fprintf(out, "Scan this QR code with WeChat (or open %s):\n%s\n", content, term)
		},
		Scanned: func() { fmt.Fprintln(out, "Scanned; confirm in WeChat…") },
	})
	if err != nil {
		return creds, err
	}
	if err := wechat.SaveCredentials(credentialsPath(stateDir), creds); err != nil {
		return creds, err
	}
	fmt.Fprintf(out, "Logged in as bot %s; owner %s. Credentials saved in %s.\n", creds.BotID, creds.UserID, credentialsPath(stateDir))
	return creds, nil
}

// openWeChat logs in first when there are no credentials yet.
func openWeChat(o *opening) (channel.Channel, error) {
	base := o.cfg.BaseURL
	creds, err := wechat.LoadCredentials(credentialsPath(o.cfg.StateDir))
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(o.stdout, "No WeChat login yet.")
		if base == "" {
			base = wechat.DefaultBaseURL
		}
		creds, err = login(o.ctx, o.cfg.StateDir, base, o.stdout)
	}
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = creds.BaseURL
	}
	if len(o.allow) == 0 && !o.cfg.AllowAll && creds.UserID != "" {
		// The bot's owner: who scanned the login code.
		o.allow = []string{creds.UserID}
	}
	if err := o.openStore("wechat/" + creds.BotID); err != nil {
		return nil, err
	}
	return wechat.New(wechat.Config{BaseURL: base, Token: creds.Token, BotID: creds.BotID, KV: o.st, Logger: o.log}), nil
}
