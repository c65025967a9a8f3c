// Package childenv is the one policy for the environment of every process
// sluice starts: Bash commands (and !commands), MCP stdio servers, and any
// later kind of child (hooks). A child gets
//
//  1. sluice's own environment, without every variable whose name looks
//     like a secret (Secret) — the providers' keys among them — so that a
//     command such as `env`, or a server that logs its environment, cannot
//     put a credential into a tool result and from there into every face
//     and the session file;
//  2. plus the variables named in the allowlist (the settings file's
//     "allowEnv"), passed even though their names look secret, for the
//     commands that need them (a GITHUB_TOKEN for gh, say);
//  3. plus what the configuration sets for that one process (an MCP
//     server's "env"), passed as written: it was given to that server on
//     purpose.
package childenv

import (
	"slices"
	"strings"
)

// Secret reports whether an environment variable's name looks like it
// holds a credential: it ends in TOKEN or KEY (GITHUB_TOKEN,
// AWS_SESSION_TOKEN, ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY), or holds
// SECRET, PASSWORD, PASSWD, CREDENTIAL, ACCESS_KEY, BEARER or _TOKEN_
// anywhere (CLIENT_SECRET_FILE, PGPASSWORD, GOOGLE_APPLICATION_CREDENTIALS,
// AWS_ACCESS_KEY_ID, AWS_BEARER_TOKEN_BEDROCK), case-insensitively. Names merely containing TOKEN or
// KEY elsewhere (TOKENIZERS_PARALLELISM, KEYTIMEOUT) are not secrets.
func Secret(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasSuffix(n, "TOKEN") || strings.HasSuffix(n, "KEY") {
		return true
	}
	for _, part := range []string{"SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "ACCESS_KEY", "BEARER", "_TOKEN_"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// Environ is the environment of a child: base ("NAME=value" entries, the
// form of os.Environ) without its secret-looking names unless allowed,
// then explicit, which overrides base. The result is sorted by name for
// explicit, after base's order.
func Environ(base, allow []string, explicit map[string]string) []string {
	out := make([]string, 0, len(base)+len(explicit))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := explicit[name]; set {
			continue
		}
		if Secret(name) && !slices.Contains(allow, name) {
			continue
		}
		out = append(out, kv)
	}
	names := make([]string, 0, len(explicit))
	for k := range explicit {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out = append(out, k+"="+explicit[k])
	}
	return out
}
