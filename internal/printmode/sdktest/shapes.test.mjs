// sluice's lines beside Claude Code's: the keys of each kind of line that
// Claude Code 2.1.328 wrote in the same exchange with the Agent SDK
// (testdata/claude-code-2.1.328-keys.json, names only) are in sluice's too,
// but for the ones listed in notYet, each with why.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSdkMcpServer, tool } from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';
import { bin, start, collect, scratch } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const reference = JSON.parse(fs.readFileSync(path.join(here, 'testdata/claude-code-2.1.328-keys.json'), 'utf8'));

// Keys sluice does not write yet; every other key Claude Code wrote must be
// there.
const notYet = {
  // Claude Code's own product state, with no counterpart in sluice: no
  // fast mode to say why it is off, no auto-memory directories, no
  // messaging socket.
  'system/init': ['fast_mode_disabled_reason', 'memory_paths', 'messaging_socket_path'],
  'control_response/initialize': ['fast_mode_disabled_reason', 'feedback_mode', 'hook_on_failure_supported', 'hooks_when_unanswered_kept',
    'ide_rc_auto_enable_gate', 'other_hook_ask_outranks_host', 'remote_control_auto_connect_default', 'remote_control_auto_enable',
    'remote_control_auto_on_by_default', 'remote_control_available', 'sdk_mcp_manifests_parked', 'user_output_styles_dir'],
  // Timings and counters sluice does not measure (time to first token,
  // queued turns, safety stops, subagents).
  'result/success': ['fast_mode_disabled_reason', 'first_content_frame_ms', 'model_usage_since_last_result', 'queued_turn_count',
    'safety_stops', 'subagent_stats', 'time_to_request_ms', 'ttft_ms', 'ttft_stream_ms'],
  'result.usage': ['fallback_credit', 'inference_geo', 'iterations', 'output_tokens_details', 'speed'],
  // Claude Code's permission UI hints and its hook input's extras.
  'control_request/can_use_tool': ['blocked_path', 'server_policy_ask_only'],
  'control_request/hook_callback': ['effort', 'prompt_id'],
};

test('the lines have the keys of Claude Code\'s', async (t) => {
  const { options } = await start(t, [
    { tool: 'Bash', input: { command: 'touch x.txt' } },
    { tool: 'mcp__calc__add', input: { a: 2, b: 3 } },
    { text: 'All done.' },
  ]);
  // sluice behind a tee, so that the control lines are seen too.
  const dir = scratch(t);
  const out = path.join(dir, 'stdout.ndjson');
  const wrapper = path.join(dir, 'sluice.sh');
  fs.writeFileSync(wrapper, `#!/bin/bash\nset -o pipefail\n"${bin}" "$@" | tee "${out}"\n`, { mode: 0o755 });
  const calc = createSdkMcpServer({ name: 'calc', version: '1.0.0', tools: [
    tool('add', 'Add two numbers', { a: z.number(), b: z.number() }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })),
  ] });
  await collect('do it', {
    ...options, pathToClaudeCodeExecutable: wrapper, mcpServers: { calc },
    canUseTool: async (name, input) => (name === 'Bash' ? { behavior: 'deny', message: 'no' } : { behavior: 'allow', updatedInput: input }),
    hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [async () => ({})] }] },
  });
  const got = {};
  const add = (k, o) => { got[k] ??= new Set(); for (const key of Object.keys(o)) got[k].add(key); };
  for (const line of fs.readFileSync(out, 'utf8').split('\n').filter(Boolean)) {
    const o = JSON.parse(line);
    if (o.type === 'stream_event') continue;
    if (o.type === 'control_request') add(`control_request/${o.request.subtype}`, o.request);
    else if (o.type === 'control_response') add('control_response/initialize', o.response.response);
    else if (o.type === 'result') { add(`result/${o.subtype}`, o); add('result.usage', o.usage); }
    else add(o.type + (o.subtype && o.type !== 'user' && o.type !== 'assistant' ? `/${o.subtype}` : ''), o);
  }
  for (const [kind, keys] of Object.entries(reference)) {
    if (kind === '_') continue;
    assert.ok(got[kind], `sluice wrote no ${kind} line`);
    const missing = keys.filter((k) => !got[kind].has(k) && !(notYet[kind] ?? []).includes(k));
    assert.deepEqual(missing, [], `${kind} lacks Claude Code's keys`);
  }
});
