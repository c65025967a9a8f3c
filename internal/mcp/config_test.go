package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testEnv is the environment ${VAR} references see in these tests.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{"TOKEN": "s3cret", "DIR": "/srv", "EMPTY": ""}[name]
	return v, ok
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want map[string]ServerConfig // when the config is valid
		err  string                  // a part of the error otherwise
	}{
		{
			name: "stdio",
			in:   `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}}}}`,
			want: map[string]ServerConfig{"fs": {Type: TypeStdio, Command: "npx", Args: []string{"-y", "server"}, Env: map[string]string{"K": "v"}}},
		},
		{
			name: "explicit stdio, unknown fields ignored",
			in:   `{"mcpServers": {"fs": {"type": "stdio", "command": "srv", "timeout": 5}}, "other": 1}`,
			want: map[string]ServerConfig{"fs": {Type: TypeStdio, Command: "srv"}},
		},
		{
			name: "http and sse",
			in: `{"mcpServers": {
				"h": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
				"s": {"type": "sse", "url": "http://localhost:3000/sse"}}}`,
			want: map[string]ServerConfig{
				"h": {Type: TypeHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
				"s": {Type: TypeSSE, URL: "http://localhost:3000/sse"},
			},
		},
		{
			name: "a url without a type is streamable HTTP",
			in:   `{"mcpServers": {"h": {"url": "https://example.com/mcp"}}}`,
			want: map[string]ServerConfig{"h": {Type: TypeHTTP, URL: "https://example.com/mcp"}},
		},
		{
			// The Agent SDK names its in-process servers so (Zed's ACP
			// adapter: {"acp": {"type": "sdk", "name": "acp"}}).
			name: "sdk and ws",
			in:   `{"mcpServers": {"acp": {"type": "sdk", "name": "acp"}, "ide": {"type": "ws", "url": "ws://127.0.0.1:9/mcp", "headers": {"X-Token": "t"}}}}`,
			want: map[string]ServerConfig{"acp": {Type: TypeSDK}, "ide": {Type: TypeWS, URL: "ws://127.0.0.1:9/mcp", Headers: map[string]string{"X-Token": "t"}}},
		},
		{
			name: "no servers",
			in:   `{"mcpServers": {}}`,
			want: map[string]ServerConfig{},
		},
		{
			name: "byte order mark",
			in:   "\xef\xbb\xbf" + `{"mcpServers": {"a": {"command": "x"}}}`,
			want: map[string]ServerConfig{"a": {Type: TypeStdio, Command: "x"}},
		},
		{
			name: "expansion",
			in: `{"mcpServers": {
				"a": {"command": "${DIR}/bin/srv", "args": ["--root=${DIR}", "${NOPE:-fallback}", "$TOKEN", "${UNCLOSED", "${EMPTY:-x}"],
				      "env": {"API_KEY": "${TOKEN}"}},
				"b": {"url": "https://example.com/${DIR}?k=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
			want: map[string]ServerConfig{
				"a": {Type: TypeStdio, Command: "/srv/bin/srv", Args: []string{"--root=/srv", "fallback", "$TOKEN", "${UNCLOSED", ""},
					Env: map[string]string{"API_KEY": "s3cret"}},
				"b": {Type: TypeHTTP, URL: "https://example.com//srv?k=s3cret", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
			},
		},
		{name: "unset variable", in: `{"mcpServers": {"a": {"command": "x", "args": ["${NOPE}", "${ALSO_NOPE}", "${NOPE}"]}}}`,
			err: `server "a": environment variables not set (and no ${VAR:-default}): ALSO_NOPE, NOPE`},
		{name: "empty", in: ``, err: "the config is not valid JSON: line 1, column 1: unexpected end of JSON input"},
		{name: "truncated", in: `{"mcpServers": {`, err: "the config is not valid JSON: line 1, column 16: unexpected end of JSON input"},
		{name: "syntax error", in: "{\n  \"mcpServers\": {\n    \"a\": {\"command\": 'x'}}}", err: "not valid JSON: line 3, column 22: invalid character '\\''"},
		{name: "top level array", in: `[]`, err: "the config must be an object, not array"},
		{name: "no mcpServers", in: `{"servers": {}}`, err: `no "mcpServers" object`},
		{name: "mcpServers null", in: `{"mcpServers": null}`, err: `"mcpServers" must be an object, not null`},
		{name: "mcpServers array", in: `{"mcpServers": []}`, err: `"mcpServers" must be an object, not array`},
		{name: "server null", in: `{"mcpServers": {"a": null}}`, err: `server "a": the entry must be an object, not null`},
		{name: "server string", in: `{"mcpServers": {"a": "npx"}}`, err: `server "a": the entry must be an object, not string`},
		{name: "args a string", in: `{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, err: `server "a": "args" must be an array of strings, not string`},
		{name: "args with a number", in: `{"mcpServers": {"a": {"command": "x", "args": [1]}}}`, err: `server "a": "args" must be a string, not number`},
		{name: "env with a number", in: `{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, err: `server "a": "env" must be a string, not number`},
		{name: "command not a string", in: `{"mcpServers": {"a": {"command": ["x"]}}}`, err: `server "a": "command" must be a string, not array`},
		{name: "unknown type", in: `{"mcpServers": {"a": {"type": "websocket", "url": "ws://x"}}}`, err: `server "a": unknown "type" "websocket"`},
		{name: "sdk with a command", in: `{"mcpServers": {"a": {"type": "sdk", "command": "x"}}}`, err: `server "a": an sdk server is the host's`},
		{name: "ws with an http url", in: `{"mcpServers": {"a": {"type": "ws", "url": "http://h/x"}}}`, err: `server "a": "url" must be an absolute ws:// or wss:// URL`},
		{name: "no command", in: `{"mcpServers": {"a": {"args": ["x"]}}}`, err: `server "a": "command" is missing or empty`},
		{name: "blank command", in: `{"mcpServers": {"a": {"command": "  "}}}`, err: `server "a": "command" is missing or empty`},
		{name: "command and url", in: `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, err: `server "a": has both "command" and "url"`},
		{name: "stdio with url", in: `{"mcpServers": {"a": {"type": "stdio", "command": "x", "url": "http://h"}}}`, err: `a stdio server takes "command"`},
		{name: "http with command", in: `{"mcpServers": {"a": {"type": "http", "url": "http://h", "command": "x"}}}`, err: `an http server takes "url" and "headers"`},
		{name: "http without url", in: `{"mcpServers": {"a": {"type": "http"}}}`, err: `server "a": "url" is missing or empty`},
		{name: "relative url", in: `{"mcpServers": {"a": {"type": "sse", "url": "/mcp"}}}`, err: `"url" must be an absolute http:// or https:// URL`},
		{name: "ftp url", in: `{"mcpServers": {"a": {"url": "ftp://h/x?token=${TOKEN}"}}}`, err: `"url" must be an absolute http:// or https:// URL`},
		{name: "bad header name", in: `{"mcpServers": {"a": {"url": "http://h", "headers": {"Bad Name": "v"}}}}`, err: `header name "Bad Name" is not a valid HTTP header name`},
		{name: "empty name", in: `{"mcpServers": {"": {"command": "x"}}}`, err: "a server has an empty name"},
		{name: "names collide", in: `{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}`, err: `servers "a.b" and "a_b" would give their tools the same names (mcp__a_b__...)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseConfig([]byte(tc.in), testEnv)
			if err == nil && len(cfg.Failed) > 0 {
				// An entry that cannot be used fails alone, as in
				// Claude Code; the others stay.
				if len(cfg.Servers) != 0 {
					t.Errorf("servers = %#v beside the failed entry", cfg.Servers)
				}
				for _, ferr := range cfg.Failed {
					err = ferr
				}
			}
			if tc.err != "" {
				if err == nil {
					t.Fatalf("parseConfig = %+v, want an error with %q", cfg, tc.err)
				}
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %q, want ErrConfig and %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error shows a secret: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Servers, tc.want) {
				t.Errorf("servers = %#v\nwant %#v", cfg.Servers, tc.want)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"a": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg  string
		want string // the server's command, or a part of the error
		is   error
	}{
		{arg: good, want: "x"},
		{arg: ` {"mcpServers": {"a": {"command": "inline"}}}`, want: "inline"},
		{arg: bad, want: "MCP config " + bad + `: invalid MCP config: server "a": "command" is missing`, is: ErrConfig},
		{arg: `{"mcpServers": 1}`, want: `MCP config inline JSON: invalid MCP config: "mcpServers" must be an object`, is: ErrConfig},
		{arg: filepath.Join(dir, "none.json"), want: "none.json", is: os.ErrNotExist},
	}
	for _, tc := range tests {
		cfg, err := LoadConfig(tc.arg)
		if err == nil && cfg.Failed["a"] != nil {
			err = cfg.Failed["a"] // an unusable entry fails alone
		}
		if tc.is != nil {
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadConfig(%q): %v, want %v and %q", tc.arg, err, tc.is, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("LoadConfig(%q): %v", tc.arg, err)
			continue
		}
		if got := cfg.Servers["a"].Command; got != tc.want {
			t.Errorf("LoadConfig(%q): command %q, want %q", tc.arg, got, tc.want)
		}
	}

	// Several configs merge; the last entry of a server wins.
	cfg, err := LoadConfig(good, `{"mcpServers": {"a": {"command": "later"}, "b": {"command": "y"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]ServerConfig{"a": {Type: TypeStdio, Command: "later"}, "b": {Type: TypeStdio, Command: "y"}}; !reflect.DeepEqual(cfg.Servers, want) {
		t.Errorf("merged servers = %#v", cfg.Servers)
	}
	_, err = LoadConfig(good, `{"mcpServers": {"a.": {"command": "x"}}}`, `{"mcpServers": {"a_": {"command": "y"}}}`)
	if want := `servers "a." (inline JSON) and "a_" (inline JSON) would give their tools the same names`; !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
		t.Errorf("clashing names across configs: %v, want %q", err, want)
	}
	if cfg, err := LoadConfig(); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("LoadConfig() = %+v, %v; want no servers", cfg, err)
	}
}

// FuzzParseConfig checks that any input gives either an error wrapping
// ErrConfig or servers Connect can use.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "${TOKEN}"}}}}`,
		`{"mcpServers": {"h": {"type": "http", "url": "https://example.com/${DIR}", "headers": {"A": "${X:-y}"}}}}`,
		`{"mcpServers": {"s": {"type": "sse", "url": "http://h"}, "t": {"url": "http://h"}}}`,
		`{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}`,
		`{"mcpServers": {"acp": {"type": "sdk", "name": "acp"}, "w": {"type": "ws", "url": "ws://h/x"}, "e": {"command": "${NOPE}"}}}`,
		`{"mcpServers": null}`, `[]`, `{`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseConfig(data, testEnv)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		prefixes := map[string]bool{}
		for name, err := range cfg.Failed {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("server %q: error does not wrap ErrConfig: %v", name, err)
			}
		}
		for name, sc := range cfg.Servers {
			if strings.TrimSpace(name) == "" {
				t.Fatalf("server with a blank name: %#v", sc)
			}
			switch sc.Type {
			case TypeStdio:
				if strings.TrimSpace(sc.Command) == "" {
					t.Fatalf("stdio server %q without a command", name)
				}
			case TypeHTTP, TypeSSE:
				if u := strings.ToLower(sc.URL); !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
					t.Fatalf("%s server %q with URL %q", sc.Type, name, sc.URL)
				}
			case TypeWS:
				if u := strings.ToLower(sc.URL); !strings.HasPrefix(u, "ws://") && !strings.HasPrefix(u, "wss://") {
					t.Fatalf("ws server %q with URL %q", name, sc.URL)
				}
			case TypeSDK:
			default:
				t.Fatalf("server %q with type %q", name, sc.Type)
			}
			if _, ok := cfg.Failed[name]; ok {
				t.Fatalf("server %q both usable and failed", name)
			}
			if p := sanitizeName(name); prefixes[p] {
				t.Fatalf("two servers named %s in tool names", p)
			} else {
				prefixes[p] = true
			}
		}
	})
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	sc := ServerConfig{
		Env:     map[string]string{"API_KEY": "key-123456", "DEBUG": "1"},
		Headers: map[string]string{"Authorization": "Bearer tok-abcdef"},
		URL:     "https://user:pa55word@example.com/mcp?k=v&token=xyz",
	}
	msg := "key-123456 debug=1 Bearer tok-abcdef, tok-abcdef alone, https://user:pa55word@example.com/mcp?k=v&token=xyz"
	want := "*** debug=1 ***, *** alone, https://user:***@example.com/mcp?***"
	if got := redact(msg, sc.secrets()); got != want {
		t.Errorf("redact:\n got %q\nwant %q", got, want)
	}
}
