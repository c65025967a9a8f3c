// Package childenv is the one policy for the environment of every process
// sluice starts on the model's or the configuration's behalf: Bash
// commands (and !commands), hooks, MCP stdio servers, and the same for
// subagents, which share their session's policy. It follows the shape of
// Codex CLI's shell_environment_policy. A child gets:
//
//  1. a starting set from sluice's own environment by Inherit: all of it
//     (the default), the core variables only (PATH, HOME, USER, SHELL,
//     the temporary directory, locale, TERM), or none;
//  2. without the variables that look like secrets, unless
//     IgnoreDefaultExcludes: by name (DefaultExclude: *KEY*, *SECRET*,
//     *TOKEN*, *PASS*, *CREDENTIAL*, *WEBHOOK*) and by value (a URL
//     carrying a password, such as DATABASE_URL=postgres://u:pw@db/x, or
//     a connection string's password=) — so that a command such as `env`,
//     or a server that logs its environment, cannot put a credential into
//     a tool result and from there into every face and the session file;
//  3. without the variables matching Exclude;
//  4. and only those matching IncludeOnly, when it is set;
//  5. plus the variables matching Include, taken from sluice's environment
//     whatever steps 1–4 said: an explicit include overrides every exclude
//     (a GITHUB_TOKEN for gh, say; the settings' older "allowEnv");
//  6. plus Set, then what the configuration sets for that one process (an
//     MCP server's "env", a hook's CLAUDE_PROJECT_DIR), passed as written:
//     they were given on purpose.
//
// Patterns are shell globs (*, ?, [...]) matched against the whole name,
// case-insensitively.
package childenv

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Inherit values: where a child's environment starts.
const (
	InheritAll  = "all"
	InheritCore = "core"
	InheritNone = "none"
)

// DefaultExclude are the name patterns of step 2.
var DefaultExclude = []string{"*KEY*", "*SECRET*", "*TOKEN*", "*PASS*", "*CREDENTIAL*", "*WEBHOOK*"}

// core are the variables inherit "core" keeps: what a shell and common
// tools need to find programs, the home and temporary directories, and to
// print text.
var core = []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"}

// Policy is how a child's environment is made from sluice's (see the
// package comment for the order of the steps). The zero Policy inherits
// everything but the secrets.
type Policy struct {
	Inherit               string            `json:"inherit,omitempty"`
	IgnoreDefaultExcludes bool              `json:"ignoreDefaultExcludes,omitempty"`
	Exclude               []string          `json:"exclude,omitempty"`
	IncludeOnly           []string          `json:"includeOnly,omitempty"`
	Include               []string          `json:"include,omitempty"`
	Set                   map[string]string `json:"set,omitempty"`
}

// Check reports a policy that cannot be applied: an unknown Inherit or a
// malformed pattern.
func (p Policy) Check() error {
	switch p.Inherit {
	case "", InheritAll, InheritCore, InheritNone:
	default:
		return fmt.Errorf("child environment: inherit %q: want all, core or none", p.Inherit)
	}
	for _, list := range [][]string{p.Exclude, p.IncludeOnly, p.Include} {
		for _, pat := range list {
			if _, err := path.Match(strings.ToUpper(pat), ""); err != nil {
				return fmt.Errorf("child environment: pattern %q: %w", pat, err)
			}
		}
	}
	return nil
}

// matches reports whether name matches one of the patterns. A malformed
// pattern (Check reports it) matches nothing.
func matches(patterns []string, name string) bool {
	n := strings.ToUpper(name)
	for _, pat := range patterns {
		if ok, _ := path.Match(strings.ToUpper(pat), n); ok {
			return true
		}
	}
	return false
}

// passwordURL finds a URL with a password in its user information
// (scheme://user:password@host), anywhere in a value.
var passwordURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]+@`)

// passwordKeyword finds a password in a key=value connection string
// (libpq's "host=db password=x").
var passwordKeyword = regexp.MustCompile(`(?i)(^|[\s;])password\s*=\s*[^\s;]`)

// SecretValue reports whether a variable's value carries a credential
// whatever its name: a URL with a password, or a connection string's
// password=.
func SecretValue(v string) bool {
	return passwordURL.MatchString(v) || passwordKeyword.MatchString(v)
}

// Secret reports whether a variable, by its name or its value, is one the
// default excludes remove.
func Secret(name, value string) bool {
	return matches(DefaultExclude, name) || SecretValue(value)
}

// Environ is the environment of a child: base ("NAME=value" entries, the
// form of os.Environ) filtered by the policy, then p.Set, then explicit,
// which override base. The base entries keep their order; the set ones
// follow, sorted by name.
func (p Policy) Environ(base []string, explicit map[string]string) []string {
	set := make(map[string]string, len(p.Set)+len(explicit))
	for k, v := range p.Set {
		set[k] = v
	}
	for k, v := range explicit {
		set[k] = v
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, value, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok {
			continue
		}
		if p.keep(name, value) {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out = append(out, k+"="+set[k])
	}
	return out
}

// keep applies steps 1–5 to one variable of sluice's environment.
func (p Policy) keep(name, value string) bool {
	if matches(p.Include, name) {
		return true
	}
	switch p.Inherit {
	case InheritNone:
		return false
	case InheritCore:
		if !slices.Contains(core, name) {
			return false
		}
	}
	if !p.IgnoreDefaultExcludes && Secret(name, value) {
		return false
	}
	if matches(p.Exclude, name) {
		return false
	}
	return len(p.IncludeOnly) == 0 || matches(p.IncludeOnly, name)
}
