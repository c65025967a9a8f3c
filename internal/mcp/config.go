// Package mcp connects sluice's agent to MCP (Model Context Protocol)
// servers: it reads a Claude Code–compatible config file, starts or connects
// to every server in it, and exposes each server's tools as tool.Tool values
// named mcp__<server>__<tool>, as Claude Code names them.
//
// The protocol itself is the official Go SDK's
// (github.com/modelcontextprotocol/go-sdk); this package adds the config
// format, process management (process groups, stderr kept for error
// reports, a graceful then forceful stop) and the translation between MCP
// tool calls and sluice's tool.Tool.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
)

// ErrConfig is wrapped by every error about the content of a config.
var ErrConfig = errors.New("invalid MCP config")

// Server transport types, as Claude Code spells them in "type".
const (
	TypeStdio = "stdio" // a local process spoken to over stdin/stdout
	TypeHTTP  = "http"  // a streamable HTTP endpoint
	TypeSSE   = "sse"   // an HTTP+SSE endpoint (the 2024-11-05 transport)
	TypeWS    = "ws"    // a WebSocket endpoint (Claude Code's IDE transport)
	// TypeSDK is a server that lives in the program driving sluice (the
	// Agent SDK's createSdkMcpServer), reached through print mode's
	// control protocol; Connect leaves it to print mode.
	TypeSDK = "sdk"
)

// Config is a parsed MCP config: the servers to connect to, by name.
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
	// Failed are the entries that cannot be used (a missing variable, a
	// wrong shape), by server name, with why. As Claude Code does, such an
	// entry fails alone: Connect reports it as a failed server and the
	// others serve.
	Failed map[string]error `json:"-"`
}

// SDKServers are the names of the TypeSDK servers, sorted.
func (c *Config) SDKServers() []string {
	var out []string
	if c != nil {
		for name, sc := range c.Servers {
			if sc.Type == TypeSDK {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ServerConfig is one server's entry. Type is always set after parsing:
// TypeStdio servers have Command (and Args, Env), the others URL (and
// Headers). Values may hold secrets (tokens in Env, Headers or the URL):
// config errors name variables and fields, never values, and a
// ServerError shows them as "***".
type ServerConfig struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// LoadConfig reads configs from files or, like Claude Code's
// --mcp-config, from JSON strings given in place of file names (arguments
// that start with "{"), and merges them: a server named in several takes
// its last entry. ${VAR} and ${VAR:-default} in commands, arguments, env
// and header values and URLs are expanded from the process's environment.
// No arguments give a config without servers.
func LoadConfig(filesOrJSON ...string) (*Config, error) {
	merged := &Config{Servers: map[string]ServerConfig{}, Failed: map[string]error{}}
	source := map[string]string{} // server → where it came from
	for _, arg := range filesOrJSON {
		cfg, where, err := loadOne(arg)
		if err != nil {
			return nil, err
		}
		for name, sc := range cfg.Servers {
			merged.Servers[name] = sc
			delete(merged.Failed, name)
			source[name] = where
		}
		for name, err := range cfg.Failed {
			merged.Failed[name] = fmt.Errorf("MCP config %s: %w", where, err)
			delete(merged.Servers, name)
		}
	}
	// Servers from different configs may still clash in tool names.
	prefixes := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(merged.Servers)) {
		p := sanitizeName(name)
		if other, ok := prefixes[p]; ok {
			return nil, fmt.Errorf("%w: servers %q (%s) and %q (%s) would give their tools the same names (mcp__%s__...)",
				ErrConfig, other, source[other], name, source[name], p)
		}
		prefixes[p] = name
	}
	return merged, nil
}

// loadOne loads one argument of LoadConfig; where names it for messages.
func loadOne(arg string) (cfg *Config, where string, err error) {
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		where = "inline JSON"
		cfg, err = parseConfig([]byte(arg), os.LookupEnv)
	} else {
		where = arg
		var data []byte
		if data, err = os.ReadFile(arg); err != nil {
			return nil, where, fmt.Errorf("MCP config: %w", err)
		}
		cfg, err = parseConfig(data, os.LookupEnv)
	}
	if err != nil {
		return nil, where, fmt.Errorf("MCP config %s: %w", where, err)
	}
	return cfg, where, nil
}

// parseConfig parses a config's JSON, expanding ${VAR} references with
// lookup.
func parseConfig(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // editors on Windows write a BOM
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrConfig, describeJSONError(data, err, "the config"))
	}
	rawServers, ok := top["mcpServers"]
	if !ok {
		return nil, fmt.Errorf(`%w: no "mcpServers" object (want {"mcpServers": {"name": {"command": ...}}})`, ErrConfig)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(rawServers, &servers); err != nil || servers == nil {
		if err == nil { // null
			err = &json.UnmarshalTypeError{Value: "null", Type: reflect.TypeFor[map[string]ServerConfig]()}
		}
		return nil, fmt.Errorf("%w: %s", ErrConfig, describeJSONError(rawServers, err, `"mcpServers"`))
	}

	cfg := &Config{Servers: make(map[string]ServerConfig, len(servers)), Failed: map[string]error{}}
	toolPrefixes := map[string]string{} // sanitized name → server name
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names) // the first error reported does not depend on map order
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%w: a server has an empty name", ErrConfig)
		}
		prefix := sanitizeName(name)
		if other, ok := toolPrefixes[prefix]; ok {
			return nil, fmt.Errorf("%w: servers %q and %q would give their tools the same names (mcp__%s__...)", ErrConfig, other, name, prefix)
		}
		toolPrefixes[prefix] = name
		sc, err := parseServer(servers[name], lookup)
		if err != nil {
			cfg.Failed[name] = fmt.Errorf("%w: server %q: %w", ErrConfig, name, err)
			continue
		}
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

// parseServer decodes, expands and checks one server's entry.
func parseServer(raw json.RawMessage, lookup func(string) (string, bool)) (ServerConfig, error) {
	var sc ServerConfig
	if err := json.Unmarshal(raw, &sc); err != nil {
		return sc, errors.New(describeJSONError(raw, err, "the entry"))
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return sc, errors.New("the entry must be an object, not null")
	}

	ex := expander{lookup: lookup}
	sc.Command = ex.expand(sc.Command)
	for i := range sc.Args {
		sc.Args[i] = ex.expand(sc.Args[i])
	}
	for k, v := range sc.Env {
		sc.Env[k] = ex.expand(v)
	}
	sc.URL = ex.expand(sc.URL)
	for k, v := range sc.Headers {
		sc.Headers[k] = ex.expand(v)
	}
	if len(ex.missing) > 0 {
		slices.Sort(ex.missing)
		return sc, fmt.Errorf("environment variables not set (and no ${VAR:-default}): %s", strings.Join(slices.Compact(ex.missing), ", "))
	}

	if sc.Type == "" {
		// Claude Code lets stdio servers omit the type; a bare URL means
		// the current HTTP transport.
		switch {
		case sc.Command != "" && sc.URL != "":
			return sc, errors.New(`has both "command" and "url": set "type" to say which`)
		case sc.URL != "":
			sc.Type = TypeHTTP
		default:
			sc.Type = TypeStdio
		}
	}
	switch sc.Type {
	case TypeSDK:
		// The host serves it; nothing here to start or check.
		if sc.Command != "" || sc.URL != "" {
			return sc, errors.New(`an sdk server is the host's: it takes no "command" or "url"`)
		}
	case TypeWS:
		if sc.Command != "" || len(sc.Args) > 0 || len(sc.Env) > 0 {
			return sc, errors.New(`a ws server takes "url" and "headers", not "command", "args" or "env"`)
		}
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return sc, errors.New(`"url" must be an absolute ws:// or wss:// URL`)
		}
	case TypeStdio:
		if strings.TrimSpace(sc.Command) == "" {
			return sc, errors.New(`"command" is missing or empty`)
		}
		if sc.URL != "" || len(sc.Headers) > 0 {
			return sc, errors.New(`a stdio server takes "command", "args" and "env", not "url" or "headers"`)
		}
	case TypeHTTP, TypeSSE:
		if sc.Command != "" || len(sc.Args) > 0 || len(sc.Env) > 0 {
			return sc, fmt.Errorf(`an %s server takes "url" and "headers", not "command", "args" or "env"`, sc.Type)
		}
		if sc.URL == "" {
			return sc, errors.New(`"url" is missing or empty`)
		}
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL is left out: it may carry a token.
			return sc, errors.New(`"url" must be an absolute http:// or https:// URL`)
		}
		for k := range sc.Headers {
			if !validHeaderName(k) {
				return sc, fmt.Errorf("header name %q is not a valid HTTP header name", k)
			}
		}
	default:
		return sc, fmt.Errorf(`unknown "type" %q (want "stdio", "http", "sse", "ws" or "sdk")`, sc.Type)
	}
	return sc, nil
}

// validHeaderName reports whether k is an HTTP token (RFC 9110 field-name).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// expander expands ${VAR} and ${VAR:-default} as Claude Code does in
// .mcp.json, collecting the names of unset variables that have no default.
// "$VAR" without braces, and an unclosed "${", are left as they are.
type expander struct {
	lookup  func(string) (string, bool)
	missing []string
}

func (e *expander) expand(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+2+j]
		s = s[i+2+j+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if v, ok := e.lookup(name); ok {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			e.missing = append(e.missing, name)
		}
	}
	b.WriteString(s)
	return b.String()
}

// describeJSONError turns a decoding error into a message that says where
// and what, in JSON's words rather than Go's. what names the document.
func describeJSONError(data []byte, err error, what string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Sprintf("%s is not valid JSON: line %d, column %d: %v", what, line, col, syn)
	case errors.As(err, &typ):
		where := what
		if typ.Field != "" {
			where = fmt.Sprintf("%q", typ.Field)
		}
		return fmt.Sprintf("%s must be %s, not %s", where, jsonKind(typ.Type), typ.Value)
	default:
		return fmt.Sprintf("%s: %v", what, err)
	}
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

// jsonKind names what a Go type is in JSON.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object whose values are strings"
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	default:
		return "a " + t.Kind().String()
	}
}

// minSecretLen is the shortest value treated as a secret: shorter ones
// ("1", "true") would blot out ordinary words.
const minSecretLen = 6

// secrets returns the values that must not appear in messages about the
// server, longest first: env and header values (and a header's value
// after "Bearer "), the URL's query and password.
func (sc ServerConfig) secrets() []string {
	var out []string
	add := func(v string) {
		if len(v) >= minSecretLen {
			out = append(out, v)
		}
	}
	for _, v := range sc.Env {
		add(v)
	}
	for _, v := range sc.Headers {
		add(v)
		if _, token, ok := strings.Cut(v, " "); ok {
			add(token)
		}
	}
	if u, err := url.Parse(sc.URL); err == nil && sc.URL != "" {
		add(u.RawQuery)
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redact replaces every secret in s by "***".
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}
