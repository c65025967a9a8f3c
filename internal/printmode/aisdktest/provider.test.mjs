// The Vercel AI SDK's Claude Code provider (ai-sdk-provider-claude-code)
// with sluice as its Claude Code, against the SDK suite's fake model:
// what the AI SDK's user gets.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateText, streamText, Output } from 'ai';
import { createClaudeCode } from 'ai-sdk-provider-claude-code';
import { z } from 'zod';
import { startFakeModel } from '../sdktest/fakemodel.mjs';

const bin = process.env.SLUICE_BIN;
if (!bin) throw new Error('SLUICE_BIN must name the sluice binary (scripts/test.sh builds it)');

// start returns a fake model answering with answers and a provider model
// that runs sluice against it, in a scratch home and working directory.
async function start(t, answers, settings = {}) {
  const fake = await startFakeModel(answers);
  t.after(() => fake.close());
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-aisdktest-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 }));
  const cwd = path.join(root, 'work');
  fs.mkdirSync(cwd);
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    SLUICE_HOME: path.join(root, 'sluice'),
    SLUICE_CONFIG: path.join(root, 'none.json'),
    ANTHROPIC_API_KEY: 'sk-ant-test',
    ANTHROPIC_BASE_URL: fake.url,
    // One retry: the failing cases give up at once.
    SLUICE_STREAM_MAX_RETRIES: '1',
    CLAUDE_CODE_MAX_RETRIES: '1',
  };
  // So that the same cases can run against Claude Code itself, the
  // reference (SLUICE_BIN=path/to/claude): it needs these offline.
  for (const k of ['DISABLE_TELEMETRY', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', 'IS_SANDBOX']) {
    if (process.env[k]) env[k] = process.env[k];
  }
  const provider = createClaudeCode({ defaultSettings: { pathToClaudeCodeExecutable: bin, cwd, env, ...settings } });
  return { fake, cwd, model: provider('claude-sonnet-4-5') };
}

test('generateText gives the answer', async (t) => {
  const { model } = await start(t, [{ text: 'Hello from the fake model.' }]);
  const { text, finishReason } = await generateText({ model, prompt: 'say hello' });
  assert.equal(text, 'Hello from the fake model.');
  assert.equal(finishReason, 'stop');
});

test('streamText streams the answer in pieces', async (t) => {
  const { model } = await start(t, [{ text: 'A streamed answer, in several deltas.' }]);
  const result = streamText({ model, prompt: 'stream something' });
  const pieces = [];
  for await (const p of result.textStream) pieces.push(p);
  assert.equal(pieces.join(''), 'A streamed answer, in several deltas.');
  assert.ok(pieces.length > 1, `one piece: ${JSON.stringify(pieces)}`);
});

test('a tool round: the command runs and the model answers from its output', async (t) => {
  const { model, fake } = await start(t, [
    { tool: 'Bash', input: { command: 'echo tool-ran' } },
    { text: 'The command said tool-ran.' },
  ], { permissionMode: 'bypassPermissions' });
  const { text, content } = await generateText({ model, prompt: 'run it' });
  assert.equal(text, 'The command said tool-ran.');
  const call = content.find((c) => c.type === 'tool-call');
  const res = content.find((c) => c.type === 'tool-result');
  assert.equal(call?.toolName, 'Bash');
  assert.match(JSON.stringify(res?.output), /tool-ran/);
  assert.match(JSON.stringify(fake.requests[1].messages.at(-1)), /tool-ran/);
});

// failure is what the AI SDK's user is given when the call fails.
async function failure(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the call succeeded');
}

const refused = { status: 400, error: { type: 'invalid_request_error', message: 'fake model: temperature must be at most 1' } };

test('a 400: the user sees the server\'s message', async (t) => {
  // Claude Code sends a refused request again in other shapes: refused
  // each time.
  const { model } = await start(t, Array(10).fill(refused));
  const e = await failure(generateText({ model, prompt: 'hi' }));
  assert.match(e.message, /API Error: 400 fake model: temperature must be at most 1/);
  assert.doesNotMatch(e.message, /Claude Code SDK error/);
});

test('a stream that fails for good: the user sees the server\'s message', async (t) => {
  const broken = { text: 'Half an ans', fail: { type: 'api_error', message: 'fake model: the stream broke' } };
  const { model } = await start(t, [broken, broken, broken, broken]);
  const result = streamText({ model, prompt: 'hi', onError: () => {} });
  let seen;
  try {
    for await (const p of result.fullStream) if (p.type === 'error') seen = p.error;
  } catch (e) {
    seen = e;
  }
  assert.ok(seen, 'no error reached the user');
  assert.match(String(seen.message), /fake model: the stream broke/);
  assert.doesNotMatch(String(seen.message), /Claude Code SDK error/);
});

test('a stream retried after it failed mid-way shows the whole answer once', async (t) => {
  const { model } = await start(t, [
    { text: 'The whole ans', fail: { type: 'overloaded_error', message: 'Overloaded' } },
    { text: 'The whole answer, once.' },
  ]);
  const result = streamText({ model, prompt: 'hi' });
  let streamed = '';
  for await (const p of result.textStream) streamed += p;
  assert.equal(streamed, 'The whole answer, once.');
  assert.equal(await result.text, 'The whole answer, once.');
});

test('structured output: the StructuredOutput call ends the run with the object', async (t) => {
  const { model, fake } = await start(t, [{ tool: 'StructuredOutput', input: { city: 'Paris', population: 2102650 } }]);
  const { output } = await generateText({
    model,
    prompt: 'the biggest city of France',
    output: Output.object({ schema: z.object({ city: z.string(), population: z.number() }) }),
  });
  assert.deepEqual(output, { city: 'Paris', population: 2102650 });
  assert.equal(fake.requests.length, 1, 'the model was asked again after it gave the object');
});
