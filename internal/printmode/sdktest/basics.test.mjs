// The Agent SDK driving sluice: a prompt, the control requests a host
// reads, streaming input, resume, interrupt.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { start, collect, last, results, messages, sentText } from './harness.mjs';

test('a plain prompt with partial messages', async (t) => {
  const { options } = await start(t, [{ text: 'Hello from sluice.' }]);
  const msgs = await collect('Say hello', { ...options, includePartialMessages: true });
  const init = msgs.find((m) => m.type === 'system' && m.subtype === 'init');
  assert.ok(init, 'no system/init');
  assert.ok(Array.isArray(init.tools) && init.tools.includes('Bash'));
  const deltas = msgs.filter((m) => m.type === 'stream_event' && m.event.type === 'content_block_delta');
  assert.equal(deltas.map((m) => m.event.delta.text).join(''), 'Hello from sluice.');
  const assistant = msgs.find((m) => m.type === 'assistant');
  assert.equal(assistant.message.content[0].text, 'Hello from sluice.');
  const r = last(msgs);
  assert.equal(r.subtype, 'success');
  assert.equal(r.is_error, false);
  assert.equal(r.result, 'Hello from sluice.');
  assert.equal(r.num_turns, 1);
  assert.equal(typeof r.total_cost_usd, 'number');
  assert.equal(r.session_id, init.session_id);
});

test('initializationResult, supportedCommands, supportedModels, mcpServerStatus, setModel', async (t) => {
  const { options, model } = await start(t, [{ text: 'One.' }, { text: 'Two.' }]);
  const input = messages();
  const q = query({ prompt: input, options });
  const init = await q.initializationResult();
  assert.ok(Array.isArray(init.commands) && Array.isArray(init.models) && init.models.length > 0);
  assert.equal(typeof init.output_style, 'string');
  assert.deepEqual(await q.supportedCommands(), init.commands);
  const models = await q.supportedModels();
  assert.ok(models.every((m) => typeof m.value === 'string' && typeof m.displayName === 'string'));
  assert.deepEqual(await q.mcpServerStatus(), []);
  input.push('first');
  const it = q[Symbol.asyncIterator]();
  for (let m; (m = (await it.next()).value).type !== 'result';);
  await q.setModel('claude-other-model');
  input.push('second');
  for (let m; (m = (await it.next()).value).type !== 'result';);
  input.end();
  await it.return?.();
  assert.equal(model.requests[0].model, 'claude-test-model');
  assert.equal(model.requests[1].model, 'claude-other-model');
});

test('multi-turn streaming input: one result per message, in one session', async (t) => {
  const { options, model } = await start(t, [{ text: 'First answer.' }, { text: 'Second answer.' }]);
  const input = messages();
  input.push('first question');
  const q = query({ prompt: input, options });
  const got = [];
  for await (const m of q) {
    if (m.type !== 'result') continue;
    got.push(m);
    if (got.length === 1) input.push('second question');
    else input.end();
  }
  assert.deepEqual(got.map((r) => r.result), ['First answer.', 'Second answer.']);
  assert.equal(got[0].session_id, got[1].session_id);
  assert.match(sentText(model.requests[1]), /first question[\s\S]*First answer\.[\s\S]*second question/);
});

test('streaming input: a message sent during a tool call steers the run', { timeout: 60_000 }, async (t) => {
  // The command waits for a file the test writes once sluice has taken the
  // second message (its replay), so the message arrives mid-run.
  const { options, model, cwd } = await start(t, [
    { tool: 'Bash', input: { command: 'until [ -f go ]; do sleep 0.02; done; echo listed' } },
    { text: 'Only the tests.' },
  ]);
  const input = messages();
  input.push('find the Go files');
  const q = query({ prompt: input, options: { ...options, permissionMode: 'bypassPermissions', extraArgs: { 'replay-user-messages': null } } });
  const got = [];
  for await (const m of q) {
    if (m.type === 'assistant' && m.message.content.some((c) => c.type === 'tool_use')) input.push('only the tests');
    if (m.type === 'user' && m.isReplay && m.message.content === 'only the tests') fs.writeFileSync(path.join(cwd, 'go'), '');
    if (m.type !== 'result') continue;
    got.push(m);
    input.end();
  }
  // One run, one result: the message joined it after the tool result.
  assert.deepEqual(got.map((r) => r.result), ['Only the tests.']);
  assert.equal(model.requests.length, 2);
  const msgs = model.requests[1].messages;
  assert.equal(msgs.at(-1).role, 'user');
  assert.match(sentText({ messages: [msgs.at(-1)] }), /only the tests/);
  assert.match(sentText({ messages: msgs.slice(-2) }), /listed[\s\S]*only the tests/);
});

test('resume and continue carry the conversation on', async (t) => {
  const { options, model } = await start(t, [{ text: 'Noted: 42.' }, { text: 'It was 42.' }, { text: 'Still 42.' }]);
  const first = last(await collect('Remember 42', options));
  assert.equal(first.subtype, 'success');
  const resumed = last(await collect('What was it?', { ...options, resume: first.session_id }));
  assert.equal(resumed.result, 'It was 42.');
  assert.match(sentText(model.requests[1]), /Remember 42[\s\S]*Noted: 42\.[\s\S]*What was it\?/);
  const continued = last(await collect('And now?', { ...options, continue: true }));
  assert.equal(continued.result, 'Still 42.');
  assert.match(sentText(model.requests[2]), /What was it\?[\s\S]*And now\?/);
});

test('interrupt() ends the turn and the session goes on', async (t) => {
  const { options } = await start(t, [{ hang: 'Thinking about it' }, { text: 'Back again.' }]);
  const input = messages();
  input.push('long task');
  const q = query({ prompt: input, options: { ...options, includePartialMessages: true } });
  const got = [];
  let interrupted = false;
  for await (const m of q) {
    if (!interrupted && m.type === 'stream_event' && m.event.type === 'content_block_delta') {
      interrupted = true;
      await q.interrupt();
    }
    if (m.type !== 'result') continue;
    got.push(m);
    if (got.length === 1) input.push('again');
    else input.end();
  }
  assert.equal(got[0].subtype, 'error_during_execution');
  assert.equal(got[0].is_error, true);
  assert.equal(got[1].subtype, 'success');
  assert.equal(got[1].result, 'Back again.');
});

test('maxTurns stops a run that keeps calling tools', async (t) => {
  const { options } = await start(t, [
    { tool: 'Bash', input: { command: 'echo one' } },
    { tool: 'Bash', input: { command: 'echo two' } },
  ]);
  // The SDK hands over the result, then throws for it, as with Claude Code.
  const msgs = [];
  await assert.rejects(async () => {
    for await (const m of query({ prompt: 'loop', options: { ...options, maxTurns: 1, permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true } })) msgs.push(m);
  }, /maximum number of turns \(1\)/i);
  const r = last(msgs);
  assert.equal(r.subtype, 'error_max_turns');
  assert.equal(r.is_error, true);
});

test('systemPrompt as a string, and the preset with append', async (t) => {
  const { options, model } = await start(t, [{ text: 'Arr.' }, { text: 'Done.' }]);
  await collect('hi', { ...options, systemPrompt: 'You are a pirate.' });
  await collect('hi', { ...options, systemPrompt: { type: 'preset', preset: 'claude_code', append: 'Answer in haiku.' } });
  const sys = model.requests.map((r) => (typeof r.system === 'string' ? r.system : r.system.map((b) => b.text).join('\n')));
  assert.match(sys[0], /You are a pirate\./);
  assert.doesNotMatch(sys[0], /coding agent working in a terminal/);
  assert.match(sys[1], /coding agent working in a terminal[\s\S]*Answer in haiku\./);
});

test('structured output with outputFormat json_schema: the StructuredOutput call ends the run', async (t) => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const { options, model } = await start(t, [{ tool: 'StructuredOutput', input: { city: 'Paris' } }, { text: 'Paris.' }]);
  const r = last(await collect('Capital of France?', { ...options, outputFormat: { type: 'json_schema', schema } }));
  assert.equal(r.subtype, 'success');
  assert.deepEqual(r.structured_output, { city: 'Paris' });
  // As Claude Code's: the result is the JSON text, and the model is not
  // asked again.
  assert.equal(r.result, '{"city":"Paris"}');
  assert.equal(model.requests.length, 1);
  const offered = model.requests[0].tools.find((x) => x.name === 'StructuredOutput');
  assert.deepEqual(offered.input_schema, schema);
});

test('an image block in streaming input reaches the model', async (t) => {
  const { options, model } = await start(t, [{ text: 'A red dot.' }]);
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
  async function* input() {
    yield { type: 'user', parent_tool_use_id: null, session_id: '', message: { role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
      { type: 'text', text: 'What is this?' },
    ] } };
  }
  const r = last(await collect(input(), options));
  assert.equal(r.result, 'A red dot.');
  // Claude Code puts messages of its own after the user's: look at all.
  const blocks = model.requests[0].messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const image = blocks.find((b) => b.type === 'image');
  assert.ok(image, 'the model got no image block');
  assert.equal(image.source.data, png);
  assert.ok(blocks.some((b) => b.type === 'text' && b.text.includes('What is this?')));
});
