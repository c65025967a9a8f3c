// Tools through the Agent SDK: permission modes, tool rules, canUseTool,
// hooks and MCP servers (from the configuration, from initialize, and the
// SDK's in-process ones).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { query, createSdkMcpServer, tool } from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';
import { start, collect, last, messages, toolResults, systemText } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const touch = (name) => ({ tool: 'Bash', input: { command: `touch ${name}` } });
const write = (file) => ({ tool: 'Write', input: { file_path: file, content: 'hi\n' } });

test('a tool run allowed by allowedTools', async (t) => {
  const { options, cwd } = await start(t, [touch('made.txt'), { text: 'Made it.' }]);
  const r = last(await collect('make a file', { ...options, allowedTools: ['Bash(touch:*)'] }));
  assert.equal(r.result, 'Made it.');
  assert.ok(fs.existsSync(path.join(cwd, 'made.txt')));
  assert.deepEqual(r.permission_denials, []);
});

test('read-only Bash runs in default mode; other commands are denied and reported', async (t) => {
  const { options, cwd } = await start(t, [
    { tool: 'Bash', input: { command: 'ls && echo listed' } }, touch('no.txt'), { text: 'Done.' },
  ]);
  const msgs = await collect('look around', options);
  const [ls, denied] = toolResults(msgs);
  assert.equal(ls.is_error, false);
  assert.match(String(ls.content), /listed/);
  assert.equal(denied.is_error, true);
  assert.ok(!fs.existsSync(path.join(cwd, 'no.txt')));
  const r = last(msgs);
  assert.equal(r.permission_denials.length, 1);
  assert.equal(r.permission_denials[0].tool_name, 'Bash');
  assert.deepEqual(r.permission_denials[0].tool_input, { command: 'touch no.txt' });
});

test('canUseTool: allow with updatedInput, deny with a message', async (t) => {
  const { options, cwd } = await start(t, [touch('asked.txt'), touch('refused.txt'), { text: 'Done.' }]);
  const asked = [];
  const msgs = await collect('make files', {
    ...options,
    canUseTool: async (name, input, { toolUseID }) => {
      asked.push({ name, input, toolUseID });
      if (input.command === 'touch asked.txt') return { behavior: 'allow', updatedInput: { command: 'touch changed.txt' } };
      return { behavior: 'deny', message: 'Not that one.' };
    },
  });
  assert.deepEqual(asked.map((a) => a.input.command), ['touch asked.txt', 'touch refused.txt']);
  assert.ok(asked.every((a) => a.name === 'Bash' && a.toolUseID.startsWith('toolu_')));
  assert.ok(fs.existsSync(path.join(cwd, 'changed.txt')), 'the updated input ran');
  assert.ok(!fs.existsSync(path.join(cwd, 'asked.txt')));
  const [, refused] = toolResults(msgs);
  assert.equal(refused.is_error, true);
  assert.equal(refused.content, 'Not that one.');
  assert.equal(last(msgs).permission_denials.length, 1);
});

for (const [mode, wrote] of [['default', false], ['acceptEdits', true], ['bypassPermissions', true], ['plan', false], ['dontAsk', false]]) {
  test(`permission mode ${mode}`, async (t) => {
    const { options, cwd } = await start(t, [write('note.txt'), { text: 'Done.' }]);
    const msgs = await collect('write a note', { ...options, permissionMode: mode, allowDangerouslySkipPermissions: mode === 'bypassPermissions' });
    const init = msgs.find((m) => m.type === 'system' && m.subtype === 'init');
    assert.equal(init.permissionMode, mode);
    assert.equal(fs.existsSync(path.join(cwd, 'note.txt')), wrote);
    assert.equal(toolResults(msgs)[0].is_error, !wrote);
  });
}

test('setPermissionMode() changes what the next turn may do', async (t) => {
  const { options, cwd } = await start(t, [write('a.txt'), { text: 'Refused.' }, write('b.txt'), { text: 'Wrote.' }]);
  const input = messages();
  input.push('write a');
  const q = query({ prompt: input, options });
  const got = [];
  for await (const m of q) {
    if (m.type !== 'result') continue;
    got.push(m);
    if (got.length === 1) {
      await q.setPermissionMode('acceptEdits');
      input.push('write b');
    } else input.end();
  }
  assert.ok(!fs.existsSync(path.join(cwd, 'a.txt')));
  assert.ok(fs.existsSync(path.join(cwd, 'b.txt')));
});

test('disallowedTools hides a tool; tools limits what the model is offered', async (t) => {
  const { options, model } = await start(t, [{ tool: 'Read', input: { file_path: 'x' } }, { text: 'Ok.' }, { text: 'Only Read.' }]);
  const msgs = await collect('read', { ...options, disallowedTools: ['Read'], permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true });
  // As Claude Code: Read is not offered, a call to it anyway fails as a
  // call to no tool, and it is no permission denial.
  assert.ok(!model.requests[0].tools.some((x) => x.name === 'Read'));
  assert.equal(toolResults(msgs)[0].is_error, true);
  assert.deepEqual(last(msgs).permission_denials, []);
  await collect('which tools?', { ...options, tools: ['Read', 'Grep'] });
  assert.deepEqual(model.requests[2].tools.map((x) => x.name).sort(), ['Grep', 'Read']);
});

test('a PreToolUse hook denies a call and sees Claude Code\'s input', async (t) => {
  const { options, cwd } = await start(t, [touch('hooked.txt'), { text: 'Blocked.' }]);
  const seen = [];
  const msgs = await collect('touch it', {
    ...options,
    permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true,
    hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [async (input) => {
      seen.push(input);
      return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'No touching.' } };
    }] }] },
  });
  assert.equal(seen.length, 1);
  assert.equal(seen[0].hook_event_name, 'PreToolUse');
  assert.equal(seen[0].tool_name, 'Bash');
  assert.deepEqual(seen[0].tool_input, { command: 'touch hooked.txt' });
  assert.equal(typeof seen[0].session_id, 'string');
  assert.ok(!fs.existsSync(path.join(cwd, 'hooked.txt')));
  const [res] = toolResults(msgs);
  assert.equal(res.is_error, true);
  assert.match(String(res.content), /No touching\./);
});

test('an SDK in-process MCP server', async (t) => {
  const { options, model } = await start(t, [{ tool: 'mcp__calc__add', input: { a: 2, b: 3 } }, { text: 'Five.' }]);
  const calc = createSdkMcpServer({ name: 'calc', version: '1.0.0', tools: [
    tool('add', 'Add two numbers', { a: z.number(), b: z.number() }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })),
  ] });
  const input = messages();
  input.push('add');
  const q = query({ prompt: input, options: { ...options, mcpServers: { calc }, allowedTools: ['mcp__calc__add'] } });
  const msgs = [];
  const it = q[Symbol.asyncIterator]();
  for (let m; (m = (await it.next()).value).type !== 'result';) msgs.push(m);
  msgs.push({ type: 'result' });
  const status = await q.mcpServerStatus();
  input.end();
  for await (const m of it) msgs.push(m);
  assert.deepEqual(status.map((s) => [s.name, s.status]), [['calc', 'connected']]);
  const init = msgs.find((m) => m.type === 'system' && m.subtype === 'init');
  assert.ok(init.tools.includes('mcp__calc__add'));
  // Claude Code names where a server came from: the host's, sdk.
  assert.deepEqual(init.mcp_servers.map((s) => [s.name, s.source]), [['calc', 'sdk']]);
  assert.deepEqual(status.map((s) => [s.name, s.source]), [['calc', 'sdk']]);
  assert.equal(String(toolResults(msgs)[0].content), '5');
  assert.equal(model.requests.length, 2);
});

for (const delivery of ['argv', 'initialize']) {
  test(`an MCP server from the configuration (${delivery})`, async (t) => {
    const { options } = await start(t, [{ tool: 'mcp__shouter__shout', input: { text: 'hey' } }, { text: 'Shouted.' }]);
    const msgs = await collect('shout', {
      ...options, mcpServersDelivery: delivery, allowedTools: ['mcp__shouter'],
      mcpServers: { shouter: { type: 'stdio', command: process.execPath, args: [path.join(here, 'mcpserver.mjs')] } },
    });
    const init = msgs.find((m) => m.type === 'system' && m.subtype === 'init');
    assert.deepEqual(init.mcp_servers.map((s) => [s.name, s.status]), [['shouter', 'connected']]);
    // From the command line or initialize, as Claude Code names it.
    assert.deepEqual(init.mcp_servers.map((s) => [s.name, s.source]), [['shouter', 'dynamic']]);
    assert.equal(String(toolResults(msgs)[0].content), 'HEY');
  });
}

test("a subagent defined with the SDK's agents option: its messages carry parent_tool_use_id", async (t) => {
  const { options, model } = await start(t, [
    { tool: 'Agent', input: { description: 'review it', prompt: 'check the change', subagent_type: 'reviewer' } },
    { tool: 'Bash', input: { command: 'echo from-the-subagent' } },
    { text: 'The change looks fine.' },
    { text: 'Reviewed.' },
  ]);
  const msgs = await collect('review my change', {
    ...options,
    allowedTools: ['Bash(echo:*)'],
    agents: { reviewer: { description: 'Reviews changes.', prompt: 'You are a careful reviewer.', tools: ['Bash'] } },
  });
  const r = last(msgs);
  assert.equal(r.result, 'Reviewed.');
  const [agentCall] = msgs.filter((m) => m.type === 'assistant' && m.message.content[0]?.name === 'Agent');
  const id = agentCall.message.content[0].id;
  const nested = msgs.filter((m) => m.parent_tool_use_id === id);
  assert.deepEqual(nested.map((m) => m.type), ['user', 'assistant', 'user'], 'the prompt, the tool call, its result');
  assert.match(String(nested[2].message.content[0].content), /from-the-subagent/);
  const [callResult] = toolResults(msgs.filter((m) => m.parent_tool_use_id === null));
  assert.match(String(callResult.content), /The change looks fine\./);
  // The subagent asked the model with its own prompt and context.
  const child = model.requests.find((q) => systemText(q).includes('You are a careful reviewer.'));
  assert.ok(child, 'no request with the definition prompt');
  assert.deepEqual(child.messages.length, 1);
  assert.ok(r.total_cost_usd >= 0 && r.subagent_stats?.spawned === 1);
});
