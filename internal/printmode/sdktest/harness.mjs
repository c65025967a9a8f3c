// What every SDK case shares: a fake model, a scratch home and working
// directory, and the sluice binary (SLUICE_BIN, built by scripts/test.sh)
// as the SDK's Claude Code.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { startFakeModel } from './fakemodel.mjs';

export const bin = process.env.SLUICE_BIN;
if (!bin) throw new Error('SLUICE_BIN must name the sluice binary (scripts/test.sh builds it)');

// scratch makes a directory that is removed when the process exits.
export function scratch(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-sdktest-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// start returns a fake model answering with answers and the SDK options
// that point sluice at it, in a working directory of its own.
export async function start(t, answers) {
  const model = await startFakeModel(answers);
  t.after(() => model.close());
  const root = scratch(t);
  const cwd = path.join(root, 'work');
  fs.mkdirSync(cwd);
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    SLUICE_HOME: path.join(root, 'sluice'),
    SLUICE_CONFIG: path.join(root, 'none.json'),
    ANTHROPIC_API_KEY: 'sk-ant-test',
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_MODEL: 'claude-test-model',
  };
  // So that the same cases can run against Claude Code itself, the
  // reference (SLUICE_BIN=path/to/claude): it needs these offline.
  for (const k of ['DISABLE_TELEMETRY', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', 'IS_SANDBOX']) {
    if (process.env[k]) env[k] = process.env[k];
  }
  const stderr = [];
  const options = { pathToClaudeCodeExecutable: bin, cwd, env, stderr: (s) => stderr.push(s) };
  return { model, cwd, options, stderr };
}

// collect runs a query to its end and returns every message.
export async function collect(prompt, options) {
  const msgs = [];
  for await (const m of query({ prompt, options })) msgs.push(m);
  return msgs;
}

export const results = (msgs) => msgs.filter((m) => m.type === 'result');
export const last = (msgs) => results(msgs).at(-1);

// toolResults are the tool results the SDK's user saw, in order.
export function toolResults(msgs) {
  return msgs.filter((m) => m.type === 'user').flatMap((m) => m.message.content.filter((c) => c.type === 'tool_result'));
}

// text of a request's messages, for asserting what the model was sent.
export function sentText(req) {
  return req.messages.flatMap((m) => (typeof m.content === 'string' ? [m.content] : m.content.map((c) => c.text ?? (typeof c.content === 'string' ? c.content : JSON.stringify(c.content ?? c.input ?? ''))))).join('\n');
}

export function systemText(req) {
  return typeof req.system === 'string' ? req.system : (req.system ?? []).map((b) => b.text).join('\n');
}

// messages is an async iterable of user messages, for streaming input;
// push adds one, end ends the input.
export function messages() {
  const queue = [];
  let wake;
  let ended = false;
  return {
    push(text) { queue.push({ type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null, session_id: '' }); wake?.(); },
    end() { ended = true; wake?.(); },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (queue.length) { yield queue.shift(); continue; }
        if (ended) return;
        await new Promise((r) => { wake = r; });
        wake = undefined;
      }
    },
  };
}
