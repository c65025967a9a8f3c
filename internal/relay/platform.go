package relay

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/internal/relay/channel"
	"github.com/sluicehq/sluice/internal/relay/deliver"
	"github.com/sluicehq/sluice/internal/relay/store"
)

// A Platform is a chat platform the relay serves. Each is its own files
// (its client under channel/, its opening here) and one line in
// Platforms; the command line, help texts and simulate take it from there.
type Platform struct {
	Name string
	// Usage are its lines of 'sluice relay' usage.
	Usage string
	// Limit is a message's most characters (package split).
	Limit int
	// Pacing are its delivery pacing's defaults.
	Pacing func() deliver.Pacing
	// DefaultBaseURL is where its API is.
	DefaultBaseURL string
	// Webhook says it can receive by webhook (Config.WebhookURL).
	Webhook bool
	// Login logs its bot in and keeps the credentials in stateDir
	// ('sluice relay NAME login'); nil when it needs none.
	Login func(ctx context.Context, stateDir, baseURL string, out io.Writer) error

	// open connects to the platform: it reads the account's credentials,
	// opens the account's store (o.openStore) and returns the channel.
	open func(o *opening) (channel.Channel, error)
}

// Platforms are the chat platforms, one line each.
var Platforms = []Platform{platformWeChat, platformTelegram}

// FindPlatform is the platform named name.
func FindPlatform(name string) (Platform, bool) {
	i := slices.IndexFunc(Platforms, func(p Platform) bool { return p.Name == name })
	if i < 0 {
		return Platform{}, false
	}
	return Platforms[i], true
}

// opening is what a platform's open works with: the run's configuration
// and state, which it fills in as it goes.
type opening struct {
	// ctx is the run's; open may replace it (a webhook server whose
	// failure stops the run).
	ctx    context.Context
	cfg    *Config
	log    *slog.Logger
	stdout io.Writer
	// allow are the chats allowed; open may add the bot's owner.
	allow []string
	// openStore opens the account's state: a file of this machine's, or
	// in cluster mode PostgreSQL's, shared by the account's nodes. A
	// platform reads its credentials before: the account's name is the
	// bot's id.
	openStore func(account string) error
	st        *store.Store
	node      *Cluster
	nc        *nats.Conn
	// stopServing stops a webhook server of the node; served is closed
	// when it stopped (nil: none).
	stopServing context.CancelCauseFunc
	served      chan struct{}
}

// DefaultStateDir is $XDG_DATA_HOME/sluice/relay, else
// ~/.local/share/sluice/relay, else the user config dir's sluice/relay.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sluice", "relay")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "sluice", "relay")
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "sluice", "relay")
	}
	return "sluice-relay"
}
