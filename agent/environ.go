package agent

import (
	"os"

	"github.com/sluicehq/sluice/internal/childenv"
)

// EnvPolicy is the policy for child processes' environments (package
// childenv): what to inherit, which names to exclude or include, what to
// set.
type EnvPolicy = childenv.Policy

// toolEnviron is the environment tools run with: the process's, filtered
// by the one policy for child processes, so that a command such as `env`
// cannot put an API key into a tool result, and from there into every
// face and the session file.
func toolEnviron(p EnvPolicy) []string {
	return p.Environ(os.Environ(), nil)
}
