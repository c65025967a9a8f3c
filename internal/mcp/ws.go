package mcp

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wsTransport is MCP over a WebSocket, as Claude Code's "ws" servers speak
// it: one JSON-RPC message per text message, subprotocol "mcp".
type wsTransport struct {
	url     string
	headers map[string]string
}

// maxWSMessage bounds one message from the server (a tools/list of a big
// server, a large tool result).
const maxWSMessage = 64 << 20

func (t *wsTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	h := http.Header{}
	for k, v := range t.headers {
		h.Set(k, v)
	}
	conn, _, err := websocket.Dial(ctx, t.url, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{"mcp"}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(maxWSMessage)
	return &wsConn{conn: conn}, nil
}

type wsConn struct{ conn *websocket.Conn }

func (c *wsConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(data)
}

func (c *wsConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, websocket.MessageText, data)
}

func (c *wsConn) Close() error      { return c.conn.Close(websocket.StatusNormalClosure, "") }
func (c *wsConn) SessionID() string { return "" }
