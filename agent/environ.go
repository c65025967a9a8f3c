package agent

import (
	"os"

	"github.com/sluicehq/sluice/internal/childenv"
)

// toolEnviron is the environment tools run with: the process's, filtered
// by the one policy for child processes (package childenv: secret-looking
// names removed unless allowed), so that a command such as `env` cannot
// put an API key into a tool result, and from there into every face and
// the session file.
func toolEnviron(allow []string) []string {
	return childenv.Environ(os.Environ(), allow, nil)
}
