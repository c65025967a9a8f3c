// Package hooks runs the user's command hooks as Claude Code does: the
// "hooks" of ~/.claude/settings.json, <project>/.claude/settings.json and
// <project>/.claude/settings.local.json (merged: every hook of every file
// runs), each a shell command that gets the event as JSON on stdin and
// answers with its exit code (2 blocks, stderr going to the model) and,
// on success, optionally a JSON document with decisions on stdout.
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Event names a hook event, as Claude Code spells it.
type Event string

// The events sluice fires.
const (
	PreToolUse       Event = "PreToolUse"
	PostToolUse      Event = "PostToolUse"
	UserPromptSubmit Event = "UserPromptSubmit"
	Stop             Event = "Stop"
	SubagentStop     Event = "SubagentStop"
	SessionStart     Event = "SessionStart"
	SessionEnd       Event = "SessionEnd"
	PreCompact       Event = "PreCompact"
	Notification     Event = "Notification"
)

// DefaultTimeout bounds a hook without its own "timeout" (Claude Code's).
const DefaultTimeout = 60 * time.Second

// Command is one hook: {"type": "command", "command": ..., "timeout": s}.
type Command struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"` // seconds; 0: DefaultTimeout
	// Source is the settings file the hook came from (for diagnostics).
	Source string `json:"-"`
}

func (c Command) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(c.Timeout * float64(time.Second))
}

// Matcher is a group of hooks and what they apply to: for tool events a
// tool name ("Bash"), alternatives ("Edit|Write") or a regular expression
// ("mcp__.*"); for SessionStart, SessionEnd, PreCompact and Notification
// the event's source, reason, trigger or type. "" and "*" match everything.
type Matcher struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []Command `json:"hooks"`

	re *regexp.Regexp // set when Matcher is a regular expression
}

// simpleMatcher is what Claude Code compares as names rather than a
// regular expression: letters, digits, _ and | only.
//
// Compiled on first use: every command of the binary would pay it at init.
var simpleMatcher = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_|]+$`) })

func (m *Matcher) compile() error {
	if m.Matcher == "" || m.Matcher == "*" || simpleMatcher().MatchString(m.Matcher) {
		return nil
	}
	re, err := regexp.Compile(m.Matcher)
	if err != nil {
		return fmt.Errorf("matcher %q: %w", m.Matcher, err)
	}
	m.re = re
	return nil
}

// Matches reports whether the group applies to target (a tool name, a
// source, ...).
func (m *Matcher) Matches(target string) bool {
	switch {
	case m.Matcher == "" || m.Matcher == "*":
		return true
	case m.re != nil:
		return m.re.MatchString(target)
	}
	for alt := range strings.SplitSeq(m.Matcher, "|") {
		if alt == target {
			return true
		}
	}
	return false
}

// Config is the hooks of every settings file read, merged: per event, the
// groups of each file in the order read.
type Config map[Event][]Matcher

// Empty reports whether there is no hook at all.
func (c Config) Empty() bool {
	for _, ms := range c {
		for _, m := range ms {
			if len(m.Hooks) > 0 {
				return false
			}
		}
	}
	return true
}

// Files are the settings files Claude Code reads, user's first.
func Files(home, projectDir string) []string {
	return SourceFiles(home, projectDir, AllSources)
}

// Source names a settings file as Claude Code's --setting-sources does.
type Source string

// The settings sources.
const (
	SourceUser    Source = "user"    // ~/.claude/settings.json
	SourceProject Source = "project" // <project>/.claude/settings.json
	SourceLocal   Source = "local"   // <project>/.claude/settings.local.json
)

// AllSources are the sources read when none are named.
var AllSources = []Source{SourceUser, SourceProject, SourceLocal}

// SourceFiles is Files for the given sources only.
func SourceFiles(home, projectDir string, sources []Source) []string {
	var files []string
	for _, src := range sources {
		switch {
		case src == SourceUser && home != "":
			files = append(files, filepath.Join(home, ".claude", "settings.json"))
		case src == SourceProject && projectDir != "":
			files = append(files, filepath.Join(projectDir, ".claude", "settings.json"))
		case src == SourceLocal && projectDir != "":
			files = append(files, filepath.Join(projectDir, ".claude", "settings.local.json"))
		}
	}
	return files
}

// Load reads the hooks of the given settings files; a file that does not
// exist is skipped, one that is not valid is an error naming it.
func Load(files ...string) (Config, error) {
	conf := Config{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		part, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for ev, ms := range part {
			for i := range ms {
				for j := range ms[i].Hooks {
					ms[i].Hooks[j].Source = f
				}
			}
			conf[ev] = append(conf[ev], ms...)
		}
	}
	return conf, nil
}

// Parse reads the "hooks" of one settings document (the other settings
// are not sluice's business here). Events sluice does not know are kept:
// they simply never fire.
func Parse(data []byte) (Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, nil
	}
	var doc struct {
		Hooks map[Event][]Matcher `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	conf := Config(doc.Hooks)
	if conf == nil {
		conf = Config{}
	}
	for ev, ms := range conf {
		for i := range ms {
			if err := ms[i].compile(); err != nil {
				return nil, fmt.Errorf("hooks.%s: %w", ev, err)
			}
			for _, h := range ms[i].Hooks {
				if h.Type == "command" && strings.TrimSpace(h.Command) == "" {
					return nil, fmt.Errorf("hooks.%s: a command hook without a command", ev)
				}
			}
		}
	}
	return conf, nil
}
