// The Agent SDK's options that become Claude Code flags sluice honours:
// fallbackModel, effort, thinking, betas, settings (on the command line or
// in initialize), disallowedTools in initialize, includeHookEvents,
// resumeSessionAt.
import test from 'node:test';
import assert from 'node:assert/strict';
import { start, collect, last, sentText, toolResults } from './harness.mjs';

test('fallbackModel after overloaded answers; effort, thinking and betas reach the model', async (t) => {
  const { options, model } = await start(t, [{ status: 529 }, { status: 529 }, { status: 529 }, { text: 'From the fallback.' }]);
  const msgs = await collect('hello', {
    ...options, model: 'main-model', fallbackModel: 'spare-model', effort: 'high', thinking: { type: 'adaptive' },
    betas: ['context-1m-2025-08-07'],
  });
  assert.equal(last(msgs).result, 'From the fallback.');
  assert.deepEqual(model.requests.map((r) => r.model), ['main-model', 'main-model', 'main-model', 'spare-model']);
  const fallback = msgs.find((m) => m.type === 'system' && m.subtype === 'model_fallback');
  assert.ok(fallback, 'no model_fallback message');
  assert.equal(fallback.original_model, 'main-model');
  assert.equal(fallback.fallback_model, 'spare-model');
  const req = model.requests[3];
  assert.equal(req.thinking.type, 'adaptive');
  assert.deepEqual(req.output_config, { effort: 'high' });
  assert.match(model.headers[3]['anthropic-beta'], /context-1m-2025-08-07/);
});

for (const delivery of ['argv', 'initialize']) test(`settings (${delivery}) hooks and permissions apply; includeHookEvents shows the hooks run`, async (t) => {
  const { options } = await start(t, [
    { tool: 'Bash', input: { command: 'echo hi' } },
    { tool: 'Read', input: { file_path: '/etc/hostname' } },
    { text: 'Done.' },
  ]);
  const msgs = await collect('go', {
    ...options, includeHookEvents: true, permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true,
    settingsDelivery: delivery,
    settings: {
      hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo checked' }] }] },
      // Even bypassPermissions does not run what a deny rule names.
      permissions: { deny: ['Read'] },
    },
  });
  const started = msgs.filter((m) => m.type === 'system' && m.subtype === 'hook_started');
  const response = msgs.filter((m) => m.type === 'system' && m.subtype === 'hook_response');
  assert.equal(started.length, 1);
  assert.equal(response.length, 1);
  assert.equal(response[0].hook_id, started[0].hook_id);
  assert.equal(response[0].hook_name, 'PreToolUse:Bash');
  assert.equal(response[0].stdout, 'checked\n');
  assert.equal(response[0].outcome, 'success');
  // The Read call was refused, not run.
  const results = toolResults(msgs);
  assert.equal(results.length, 2);
  assert.equal(results[1].is_error, true);
});

test('resumeSessionAt resumes the session at an earlier answer', async (t) => {
  const { options, model } = await start(t, [{ text: 'First.' }, { text: 'Second.' }, { text: 'Third.' }]);
  const one = await collect('one', options);
  const id = last(one).session_id;
  await collect('two', { ...options, resume: id });
  const at = one.find((m) => m.type === 'assistant').uuid;
  const three = await collect('three', { ...options, resume: id, resumeSessionAt: at });
  assert.equal(last(three).result, 'Third.');
  const sent = sentText(model.requests[2]);
  assert.match(sent, /one[\s\S]*First\.[\s\S]*three/);
  assert.doesNotMatch(sent, /two|Second/);
});

test('disallowedTools delivered in initialize refuse the tool', async (t) => {
  const { options } = await start(t, [{ tool: 'Read', input: { file_path: '/etc/hostname' } }, { text: 'Done.' }]);
  const msgs = await collect('go', {
    ...options, permissionMode: 'bypassPermissions', allowDangerouslySkipPermissions: true,
    disallowedTools: ['Read'], disallowedToolsDelivery: 'initialize',
  });
  assert.equal(last(msgs).subtype, 'success');
  const results = toolResults(msgs);
  assert.equal(results.length, 1);
  assert.equal(results[0].is_error, true);
});
