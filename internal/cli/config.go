package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/childenv"
)

// Config is the settings file, $SLUICE_CONFIG or
// $XDG_CONFIG_HOME/sluice/config.json (~/.config/sluice/config.json). Its
// values are defaults: the environment overrides the stream timeouts, and
// flags override everything. API keys are not read from it: they come from
// the environment only, so that they are never written to a file by us.
type Config struct {
	Provider           string   `json:"provider,omitempty"`
	Model              string   `json:"model,omitempty"`
	BaseURL            string   `json:"baseURL,omitempty"`
	PermissionMode     string   `json:"permissionMode,omitempty"`
	MaxTurns           int      `json:"maxTurns,omitempty"`
	MaxTokens          int      `json:"maxTokens,omitempty"`
	ThinkingBudget     int      `json:"thinkingBudget,omitempty"`
	AppendSystemPrompt string   `json:"appendSystemPrompt,omitempty"`
	AddDirs            []string `json:"addDirs,omitempty"`
	StallWarning       Duration `json:"stallWarning,omitempty"`
	StreamIdleTimeout  Duration `json:"streamIdleTimeout,omitempty"`
	ContextWindow      int      `json:"contextWindow,omitempty"`
	// AutoCompact is the share of the context window past which a session
	// compacts itself (0.85 by default; negative: never).
	AutoCompact float64 `json:"autoCompact,omitempty"`
	// ProjectMemory false stops AGENTS.md and CLAUDE.md files from joining
	// the system prompt (they do by default).
	ProjectMemory *bool `json:"projectMemory,omitempty"`
	// ChildEnv is the policy for child processes' environments (Bash
	// commands, hooks, MCP stdio servers; package childenv).
	ChildEnv *childenv.Policy `json:"childEnv,omitempty"`
	// AllowEnv names environment variables that child processes get
	// although the policy excludes them: ChildEnv's "include", kept for
	// the settings files that have it.
	AllowEnv []string `json:"allowEnv,omitempty"`

	// Cluster mode of serve and relay (see ClusterFlags).
	NATS         string   `json:"nats,omitempty"`
	NATSCreds    string   `json:"natsCreds,omitempty"`
	Postgres     string   `json:"postgres,omitempty"`
	PostgresFile string   `json:"postgresFile,omitempty"`
	NodeID       string   `json:"nodeId,omitempty"`
	LeaseTTL     Duration `json:"leaseTTL,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("90s").
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ConfigPath is where the settings file is looked for.
func ConfigPath(getenv func(string) string) string {
	if p := getenv("SLUICE_CONFIG"); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "sluice", "config.json")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "sluice", "config.json")
	}
	return ""
}

// LoadConfig reads the settings file; a missing file is an empty config.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// applyConfig fills the flags the user did not set from c.
func (f *AgentFlags) applyConfig(c Config, set map[string]bool) {
	str := func(name string, dst *string, v string) {
		if !set[name] && v != "" {
			*dst = v
		}
	}
	num := func(name string, dst *int, v int) {
		if !set[name] && v != 0 {
			*dst = v
		}
	}
	str("provider", &f.Provider, c.Provider)
	str("model", &f.Model, c.Model)
	str("base-url", &f.BaseURL, c.BaseURL)
	str("permission-mode", &f.PermissionMode, c.PermissionMode)
	str("append-system-prompt", &f.SystemPrompt, c.AppendSystemPrompt)
	num("max-turns", &f.MaxTurns, c.MaxTurns)
	num("max-tokens", &f.MaxTokens, c.MaxTokens)
	num("thinking-budget", &f.ThinkingBudget, c.ThinkingBudget)
	num("context-window", &f.ContextWindow, c.ContextWindow)
	if !set["add-dir"] && len(c.AddDirs) > 0 {
		f.AddDirs = append(stringList(nil), c.AddDirs...)
	}
	if !set["auto-compact"] && c.AutoCompact != 0 {
		f.AutoCompact = c.AutoCompact
	}
}

// setFlags names the flags given on the command line.
func setFlags(fset *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	if fset != nil {
		fset.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	}
	return set
}
