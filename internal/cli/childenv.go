package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/childenv"
)

// ChildEnvFlags are the flags of the child-environment policy (package
// childenv), which Bash commands, hooks, MCP stdio servers and subagents
// share. They add to the settings file's "childEnv" (and its older
// "allowEnv", which are includes); --child-env replaces its inherit.
type ChildEnvFlags struct {
	Inherit     string
	Exclude     stringList
	Include     stringList
	IncludeOnly stringList
	Set         stringList
}

// Register adds the flags to fs.
func (f *ChildEnvFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Inherit, "child-env", "", `what child processes (Bash, hooks, MCP servers) inherit of sluice's environment: all (default), core (PATH, HOME, USER, SHELL, TMPDIR, locale, TERM) or none; settings "childEnv": {"inherit"}`)
	fs.Var(&f.Exclude, "child-env-exclude", `names (globs, case-insensitive) removed from child processes' environment, besides the default *KEY*, *SECRET*, *TOKEN*, *PASS*, *CREDENTIAL*, *CREDS*, *WEBHOOK* and values holding a URL with a password (repeatable)`)
	fs.Var(&f.Include, "child-env-include", "names (globs) child processes get from sluice's environment whatever the excludes and --child-env say (repeatable)")
	fs.Var(&f.IncludeOnly, "child-env-include-only", "when given, child processes inherit only the names matching these globs (repeatable)")
	fs.Var(&f.Set, "child-env-set", "NAME=VALUE set in child processes' environment (repeatable)")
}

// Policy is the settings file's policy with the flags applied.
func (f *ChildEnvFlags) Policy(c Config) (childenv.Policy, error) {
	var p childenv.Policy
	if c.ChildEnv != nil {
		p = *c.ChildEnv
	}
	p.Include = slices.Concat(p.Include, c.AllowEnv, f.Include)
	p.Exclude = slices.Concat(p.Exclude, f.Exclude)
	p.IncludeOnly = slices.Concat(p.IncludeOnly, f.IncludeOnly)
	if f.Inherit != "" {
		p.Inherit = f.Inherit
	}
	if len(f.Set) > 0 {
		set := make(map[string]string, len(p.Set)+len(f.Set))
		for k, v := range p.Set {
			set[k] = v
		}
		for _, kv := range f.Set {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return p, fmt.Errorf("--child-env-set %q: want NAME=VALUE", kv)
			}
			set[k] = v
		}
		p.Set = set
	}
	return p, p.Check()
}
