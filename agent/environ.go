package agent

import (
	"os"
	"strings"
)

// toolEnviron is the environment tools run with: the process's, without
// the credentials sluice itself reads or that look like secrets, so that a
// command such as `env` cannot put an API key into a tool result, and from
// there into every face and the session file.
func toolEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !secretName(name) {
			out = append(out, kv)
		}
	}
	return out
}

func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, suffix := range []string{"_API_KEY", "_AUTH_TOKEN", "_ACCESS_TOKEN", "_BOT_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return n == "APIKEY" || n == "API_KEY"
}
