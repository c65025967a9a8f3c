// A stdio MCP server for the SDK cases: one tool, "shout", that upper-cases
// its text.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'shouter', version: '1.0.0' });
server.tool('shout', 'Upper-case the text', { text: z.string() }, async ({ text }) => ({
  content: [{ type: 'text', text: text.toUpperCase() }],
}));
await server.connect(new StdioServerTransport());
