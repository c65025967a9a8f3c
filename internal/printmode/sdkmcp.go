package printmode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/tool"
)

// The host's in-process MCP servers (the Agent SDK's createSdkMcpServer):
// their JSON-RPC messages travel in mcp_message control requests, and their
// tools are offered to the model as mcp__<server>__<tool>.

// sdkMCPManifest is what the SDK may send in initialize so that no
// handshake is needed: the server's initialize and tools/list results.
type sdkMCPManifest struct {
	InitializeResult json.RawMessage `json:"initializeResult"`
	ToolsListResult  *toolsList      `json:"toolsListResult"`
}

type toolsList struct {
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations struct {
			ReadOnlyHint bool `json:"readOnlyHint"`
		} `json:"annotations"`
	} `json:"tools"`
}

// sdkServers joins the in-process servers initialize names and those of
// --mcp-config, each once, initialize's first.
func sdkServers(fromInit, fromFlags []string) []string {
	out := slices.Clone(fromInit)
	for _, name := range fromFlags {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// unreachedSDKServers reports the --mcp-config's in-process servers as
// failed when the session opens without the host's initialize: only a
// host that initializes is there to serve them.
func (h *host) unreachedSDKServers() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.cfg.SDKMCPServers {
		fmt.Fprintf(h.cfg.Stderr, "sluice: MCP server %s: its type is sdk (served by the program driving sluice) and no initialize request came from that program\n", name)
		h.sdkMCP = append(h.sdkMCP, name)
		h.sdkStatus = append(h.sdkStatus, streamjson.MCPServer{Name: name, Status: "failed"})
	}
}

// mcpProtocolVersion is the MCP revision print mode speaks to the host's
// servers when it has to do the handshake itself.
const mcpProtocolVersion = "2025-06-18"

// sdkMCPTools lists a host server's tools, from its manifest or, without
// one, by a handshake over mcp_message.
func (h *host) sdkMCPTools(server string, manifest sdkMCPManifest) ([]tool.Tool, error) {
	c := &sdkMCPClient{h: h, server: server}
	list := manifest.ToolsListResult
	if list == nil {
		ctx := context.Background()
		if _, err := c.call(ctx, "initialize", map[string]any{
			"protocolVersion": mcpProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "sluice", "version": h.cfg.Version},
		}); err != nil {
			return nil, err
		}
		c.notify(ctx, "notifications/initialized")
		raw, err := c.call(ctx, "tools/list", map[string]any{})
		if err != nil {
			return nil, err
		}
		list = new(toolsList)
		if err := json.Unmarshal(raw, list); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
	}
	var out []tool.Tool
	for _, t := range list.Tools {
		if t.Name == "" {
			continue
		}
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		kind := tool.Execute
		if t.Annotations.ReadOnlyHint {
			kind = tool.ReadOnly
		}
		out = append(out, &sdkMCPTool{
			c: c, name: "mcp__" + server + "__" + t.Name, remote: t.Name,
			description: t.Description, schema: schema, kind: kind,
		})
	}
	return out, nil
}

// sdkMCPClient speaks JSON-RPC to one host server through mcp_message.
type sdkMCPClient struct {
	h      *host
	server string
	next   atomic.Int64
}

// call sends a request and returns its result, or the server's error.
func (c *sdkMCPClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.next.Add(1)
	raw, err := c.h.out.ask(ctx, map[string]any{
		"subtype": "mcp_message", "server_name": c.server,
		"message": map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params},
	})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %s: %w", c.server, method, err)
	}
	var ans struct {
		MCPResponse struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"mcp_response"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("MCP server %s: %s: malformed answer: %w", c.server, method, err)
	}
	if e := ans.MCPResponse.Error; e != nil {
		return nil, fmt.Errorf("MCP server %s: %s: %s (%d)", c.server, method, e.Message, e.Code)
	}
	if len(ans.MCPResponse.Result) == 0 {
		return nil, fmt.Errorf("MCP server %s: %s: no result", c.server, method)
	}
	return ans.MCPResponse.Result, nil
}

func (c *sdkMCPClient) notify(ctx context.Context, method string) {
	c.h.out.ask(ctx, map[string]any{
		"subtype": "mcp_message", "server_name": c.server,
		"message": map[string]any{"jsonrpc": "2.0", "method": method},
	})
}

// sdkMCPTool is one tool of a host server.
type sdkMCPTool struct {
	c                         *sdkMCPClient
	name, remote, description string
	schema                    json.RawMessage
	kind                      tool.Kind
}

func (t *sdkMCPTool) Name() string            { return t.name }
func (t *sdkMCPTool) Description() string     { return t.description }
func (t *sdkMCPTool) Schema() json.RawMessage { return t.schema }
func (t *sdkMCPTool) Kind() tool.Kind         { return t.kind }

// Compact shows the arguments as they are, bounded.
func (t *sdkMCPTool) Compact(params json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, params) != nil {
		return ""
	}
	s := buf.String()
	if len(s) > 160 {
		s = strings.ToValidUTF8(s[:160], "") + "…"
	}
	return s
}

// Run calls the tool through the host; text content is the result, other
// content is summarised in brackets.
func (t *sdkMCPTool) Run(ctx context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	args := json.RawMessage("{}")
	if p := bytes.TrimSpace(params); len(p) > 0 && string(p) != "null" {
		if p[0] != '{' {
			return tool.Result{}, errors.New(t.name + ": the parameters must be a JSON object")
		}
		args = p
	}
	raw, err := t.c.call(ctx, "tools/call", map[string]any{"name": t.remote, "arguments": args})
	if err != nil {
		return tool.Result{}, err
	}
	var res struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MimeType string `json:"mimeType"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return tool.Result{}, fmt.Errorf("%s: malformed result: %w", t.name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, fmt.Sprintf("[%s %s]", c.Type, c.MimeType))
		}
	}
	return tool.Result{Content: strings.Join(parts, "\n"), IsError: res.IsError}, nil
}
