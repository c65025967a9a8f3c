package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/tool"
)

// maxNameLen is the longest tool name every provider accepts (OpenAI's
// limit; Anthropic's is larger).
const maxNameLen = 64

// Compact's bounds, in characters.
const (
	compactValueLen = 60
	compactLen      = 160
)

// mcpTool is one server tool as a tool.Tool.
type mcpTool struct {
	srv         *server
	name        string // mcp__server__tool
	remote      string // the server's name for it
	description string
	schema      json.RawMessage
	kind        tool.Kind
}

// newTool adapts a listed tool.
func newTool(s *server, t *sdk.Tool) (*mcpTool, error) {
	if t.Name == "" {
		return nil, errors.New("a tool has no name")
	}
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		if !bytes.Equal(b, []byte("null")) {
			schema = b
		}
	}
	kind := tool.Execute
	if t.Annotations != nil && t.Annotations.ReadOnlyHint {
		// The user chose to run this server; its word that a tool
		// changes nothing is what lets it run without approval.
		kind = tool.ReadOnly
	}
	return &mcpTool{
		srv:         s,
		name:        toolName(s.name, t.Name),
		remote:      t.Name,
		description: t.Description,
		schema:      schema,
		kind:        kind,
	}, nil
}

// toolName is Claude Code's name for a server's tool: mcp__server__tool,
// with characters providers reject replaced by "_". A name past maxNameLen
// is cut and ends with a hash of the whole, so that it stays unique.
func toolName(server, name string) string {
	n := "mcp__" + sanitizeName(server) + "__" + sanitizeName(name)
	if len(n) <= maxNameLen {
		return n
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return n[:maxNameLen-len(suffix)] + suffix
}

// sanitizeName replaces every character outside [A-Za-z0-9_-] with "_".
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// Name implements tool.Tool.
func (t *mcpTool) Name() string { return t.name }

// Description implements tool.Tool.
func (t *mcpTool) Description() string { return t.description }

// Schema implements tool.Tool.
func (t *mcpTool) Schema() json.RawMessage { return t.schema }

// Kind implements tool.Tool: Execute unless the server marks the tool
// read-only.
func (t *mcpTool) Kind() tool.Kind { return t.kind }

// Compact implements tool.Tool: the arguments as key: value pairs, in the
// model's order, each value and the whole line bounded.
func (t *mcpTool) Compact(params json.RawMessage) string {
	return compactArgs(params)
}

// Run implements tool.Tool. A result the server marks isError is a
// Result with IsError; an error is returned when the call could not be
// made (bad params, a dead server, ctx cancelled, ErrClosed).
func (t *mcpTool) Run(ctx context.Context, _ *tool.Env, params json.RawMessage, out tool.Output) (tool.Result, error) {
	args := json.RawMessage("{}")
	if p := bytes.TrimSpace(params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if p[0] != '{' || !json.Valid(p) {
			return tool.Result{}, fmt.Errorf("%s: the parameters must be a JSON object", t.name)
		}
		args = p
	}
	res, err := t.srv.call(ctx, t.remote, args, out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	return tool.Result{Content: truncate(renderContent(res), t.srv.maxOutput), IsError: res.IsError}, nil
}

// renderContent turns a result into text: text content as it is, other
// content summarised in brackets, since a tool result is text for now.
// A result with only structured content gets its JSON.
func renderContent(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob))))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// size renders a byte count as people read it: "512 bytes", "12 KB",
// "3.4 MB".
func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%d KB", (n+512)/1024)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
	}
}

// truncate keeps the first max bytes of s (whole characters) and says how
// much was left out.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[output truncated: showed %d of %d bytes]", s[:cut], cut, len(s))
}

// compactArgs renders a JSON object as `key: value, key: value`, values in
// compact JSON. It never fails: anything else is shown as it is, on one
// line, bounded.
func compactArgs(params json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return clip(oneLine(string(params)), compactLen)
	}
	var pairs []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return clip(oneLine(string(params)), compactLen)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return clip(oneLine(string(params)), compactLen)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			buf.Reset()
			buf.Write(raw)
		}
		pairs = append(pairs, fmt.Sprintf("%v: %s", key, clip(buf.String(), compactValueLen)))
	}
	return clip(strings.Join(pairs, ", "), compactLen)
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip bounds s to n characters, ending it with "…" when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
