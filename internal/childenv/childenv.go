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
//     *TOKEN*, *PASS*, *CREDENTIAL*, *CREDS*, *WEBHOOK*) and by value (a URL
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
	"sync"
)

// Inherit values: where a child's environment starts.
const (
	InheritAll  = "all"
	InheritCore = "core"
	InheritNone = "none"
)

// DefaultExclude are the name patterns of step 2. *CREDS* is a file of
// credentials named by its path, as NATS_CREDS (a cluster node's own
// NATS identity, which the nats CLI would pick up from a child's
// environment).
var DefaultExclude = []string{"*KEY*", "*SECRET*", "*TOKEN*", "*PASS*", "*CREDENTIAL*", "*CREDS*", "*WEBHOOK*"}

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

// globs are patterns made ready to match upper-cased names: every
// session computes its environment, so the common shapes — a name, and
// *WORD* — are compared as strings rather than run through path.Match.
type globs []glob

type glob struct {
	pat      string // upper-cased
	contains bool   // pat is *WORD*: contains WORD (held in pat)
	literal  bool   // no metacharacters: equal
}

func compile(patterns []string) globs {
	g := make(globs, 0, len(patterns))
	for _, p := range patterns {
		p = strings.ToUpper(p)
		switch inner := strings.TrimSuffix(strings.TrimPrefix(p, "*"), "*"); {
		case !strings.ContainsAny(p, `*?[\`):
			g = append(g, glob{pat: p, literal: true})
		case len(p) >= 2 && len(inner) == len(p)-2 && !strings.ContainsAny(inner, `*?[\`):
			g = append(g, glob{pat: inner, contains: true})
		default:
			g = append(g, glob{pat: p})
		}
	}
	return g
}

// match reports whether the upper-cased name matches one of the
// patterns. A malformed pattern (Check reports it) matches nothing.
func (g globs) match(upper string) bool {
	for _, p := range g {
		switch {
		case p.literal:
			if upper == p.pat {
				return true
			}
		case p.contains:
			if strings.Contains(upper, p.pat) {
				return true
			}
		default:
			if ok, _ := path.Match(p.pat, upper); ok {
				return true
			}
		}
	}
	return false
}

var defaultExclude = compile(DefaultExclude)

// passwordURL finds a URL with a password in its user information
// (scheme://user:password@host), anywhere in a value. Compiled when first
// needed, as passwordKeyword is: at package init every command paid for
// both (8.8 KB, 0.1 ms), most never filter an environment.
var passwordURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]+@`)
})

// passwordKeyword finds a password in a key=value connection string
// (libpq's "host=db password=x").
var passwordKeyword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[\s;])password\s*=\s*[^\s;]`)
})

// SecretValue reports whether a variable's value carries a credential
// whatever its name: a URL with a password, or a connection string's
// password=.
func SecretValue(v string) bool {
	// The expressions only where they can match: most values hold
	// neither "://" nor "password".
	return (strings.Contains(v, "://") && passwordURL().MatchString(v)) ||
		(containsFold(v, "password") && passwordKeyword().MatchString(v))
}

// containsFold reports whether s contains the lower-case ASCII word,
// in any case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// Secret reports whether a variable, by its name or its value, is one the
// default excludes remove.
func Secret(name, value string) bool {
	return defaultExclude.match(strings.ToUpper(name)) || SecretValue(value)
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
	c := compiled{p: p, include: compile(p.Include), exclude: compile(p.Exclude), includeOnly: compile(p.IncludeOnly)}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, value, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok {
			continue
		}
		if c.keep(name, value) {
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

// compiled is a policy with its patterns compiled, for one Environ.
type compiled struct {
	p                             Policy
	include, exclude, includeOnly globs
}

// keep applies steps 1–5 to one variable of sluice's environment.
func (c compiled) keep(name, value string) bool {
	upper := strings.ToUpper(name)
	if c.include.match(upper) {
		return true
	}
	switch c.p.Inherit {
	case InheritNone:
		return false
	case InheritCore:
		if !slices.Contains(core, name) {
			return false
		}
	}
	if !c.p.IgnoreDefaultExcludes && (defaultExclude.match(upper) || SecretValue(value)) {
		return false
	}
	if c.exclude.match(upper) {
		return false
	}
	return len(c.includeOnly) == 0 || c.includeOnly.match(upper)
}
