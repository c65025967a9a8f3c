// Zed's Claude Code ACP adapter (@zed-industries/claude-code-acp, pinned in
// package-lock.json) with sluice as its Claude Code (CLAUDE_CODE_EXECUTABLE
// = SLUICE_BIN), driven by the official ACP TypeScript SDK as the editor,
// against the SDK suite's fake model server. The same cases run against
// Claude Code itself with SLUICE_BIN naming its binary and
// DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, methods, ndJsonStream } from '@agentclientprotocol/sdk';
import { startFakeModel } from '../sdktest/fakemodel.mjs';

const bin = process.env.SLUICE_BIN;
if (!bin) throw new Error('SLUICE_BIN must name the sluice binary (scripts/test.sh builds it)');
const adapter = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules/@zed-industries/claude-code-acp/dist/index.js');

// run starts a fake model answering with answers and the adapter over
// sluice, initializes it as an editor would, opens a session and runs op.
// permission answers the adapter's permission requests with an option id.
async function run(t, answers, permission, op) {
  const model = await startFakeModel(answers);
  t.after(() => model.close());
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-acpadapter-'));
  // Claude Code, the reference, may still be writing there as it ends:
  // then the scratch directory is left behind.
  t.after(() => {
    try { fs.rmSync(root, { recursive: true, force: true, maxRetries: 10 }); } catch { /* see above */ }
  });
  const cwd = path.join(root, 'work');
  fs.mkdirSync(cwd);
  const env = {
    PATH: process.env.PATH, HOME: root, SLUICE_HOME: path.join(root, 'sluice'), SLUICE_CONFIG: path.join(root, 'none.json'),
    ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: model.url, ANTHROPIC_MODEL: 'claude-test-model',
    CLAUDE_CODE_EXECUTABLE: bin,
  };
  for (const k of ['DISABLE_TELEMETRY', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', 'IS_SANDBOX']) {
    if (process.env[k]) env[k] = process.env[k];
  }
  // In a process group of its own, so that its Claude Code goes with it.
  const child = spawn(process.execPath, [adapter], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const updates = [];
  const asked = [];
  const app = client({ name: 'sluice-acpadapter-test' });
  app.onNotification(methods.client.session.update, ({ params }) => { updates.push(params); });
  app.onRequest(methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    return { outcome: { outcome: 'selected', optionId: permission(params) } };
  });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      const session = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
      return await op({ ctx, init, session, updates, asked, model, cwd });
    });
  } catch (e) {
    throw new Error(`${e?.message ?? e}\nadapter stderr:\n${stderr}`);
  } finally {
    // The adapter does not end with its input: it is stopped, and its
    // Claude Code with it.
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      process.kill(-child.pid, 'SIGTERM');
      await exited;
    }
  }
}

const prompt = (ctx, sessionId, words) => ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: words }] });
const chunks = (updates) => updates.filter((u) => u.update.sessionUpdate === 'agent_message_chunk').map((u) => u.update.content.text);
const never = () => assert.fail('no permission request was expected');

test('initialize and session/new: the session opens with its modes and models', async (t) => {
  await run(t, [], never, async ({ init, session }) => {
    assert.equal(init.protocolVersion, 1);
    assert.ok(session.sessionId);
    assert.equal(session.modes.currentModeId, 'default');
    assert.ok(session.models.availableModels.length >= 1);
  });
});

test('a streamed prompt arrives as agent_message_chunk updates', async (t) => {
  const answer = 'Streamed in several chunks: ünïcödé 🎉.';
  await run(t, [{ text: answer }], never, async ({ ctx, session, updates, model }) => {
    const resp = await prompt(ctx, session.sessionId, 'hello');
    assert.equal(resp.stopReason, 'end_turn');
    const got = chunks(updates);
    assert.ok(got.length > 1, `one chunk per delta, got ${JSON.stringify(got)}`);
    assert.equal(got.join(''), answer);
    assert.equal(model.requests.length, 1);
  });
});

test('a tool call allowed in the permission request runs, and the turn goes on', async (t) => {
  await run(t, [{ tool: 'Bash', input: { command: 'touch allowed.txt' } }, { text: 'Done.' }], () => 'allow', async ({ ctx, session, updates, asked, model, cwd }) => {
    const resp = await prompt(ctx, session.sessionId, 'make the file');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(asked.length, 1);
    assert.ok(fs.existsSync(path.join(cwd, 'allowed.txt')), 'the allowed command ran');
    assert.equal(model.requests.length, 2);
    assert.equal(chunks(updates).join(''), 'Done.');
    const done = updates.filter((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.status === 'completed');
    assert.equal(done.length, 1);
  });
});

test('a tool call rejected ends the turn: no further model request', async (t) => {
  await run(t, [{ tool: 'Bash', input: { command: 'touch rejected.txt' } }, { text: 'never asked' }], () => 'reject', async ({ ctx, session, asked, model, cwd }) => {
    // The adapter denies with interrupt: true; Claude Code ends the turn
    // with an error result, which the adapter turns into the prompt's
    // error.
    await assert.rejects(prompt(ctx, session.sessionId, 'make the file'));
    assert.equal(asked.length, 1);
    assert.ok(!fs.existsSync(path.join(cwd, 'rejected.txt')), 'the rejected command did not run');
    assert.equal(model.requests.length, 1, 'the model was asked again after the rejection');
    // The session goes on.
    model.requests.length = 0;
  });
});

test('cancel mid-stream answers cancelled', async (t) => {
  await run(t, [{ hang: 'Partial' }], never, async ({ ctx, session, updates }) => {
    const pending = prompt(ctx, session.sessionId, 'go slowly');
    while (!updates.some((u) => u.update.sessionUpdate === 'agent_message_chunk')) await new Promise((r) => setTimeout(r, 10));
    await ctx.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
    const resp = await pending;
    assert.equal(resp.stopReason, 'cancelled');
  });
});
