// The view's pure helpers: reasoning headers and tool summaries, as
// DESIGN.md §5 describes them for every face.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { reasoningHeader, toolSummary } from '../static/view.js';

test('reasoning header: live, frozen, or without a duration', () => {
  const t0 = 1_700_000_000_000;
  const cases = [
    [{ stage: 'streaming', startedAt: t0 }, t0 + 9_400, 'Thinking 9s'],
    [{ stage: 'streaming' }, t0, 'Thinking'],
    [{ stage: 'end', startedAt: t0, endedAt: t0 + 15_000 }, t0 + 99_000, 'Thought for 15s'],
    [{ stage: 'end', startedAt: t0, endedAt: t0 + 200 }, t0, 'Thought for <1s'],
    [{ stage: 'end', startedAt: t0, endedAt: t0 }, t0, 'Thought for <1s'], // 0 ms, as the TUI says
    [{ stage: 'end', startedAt: t0, endedAt: t0 + 500 }, t0, 'Thought for 1s'],
    [{ stage: 'end', startedAt: t0, endedAt: t0 + 1_499 }, t0, 'Thought for 1s'],
    [{ stage: 'end', startedAt: t0 }, t0, 'Thought'],
    [{ stage: 'end', endedAt: t0 }, t0, 'Thought'],
    [{ stage: 'end', startedAt: t0 + 5, endedAt: t0 }, t0, 'Thought'], // inverted
  ];
  for (const [b, now, want] of cases) assert.equal(reasoningHeader(b, now), want, JSON.stringify(b));
});

test('tool summary: compact parameters, else the tail of the streaming ones', () => {
  assert.equal(toolSummary({ compactParams: 'ls -la', parameters: '{"command":"ls -la"}' }), 'ls -la');
  assert.equal(toolSummary({ parameters: '{"command":' }), '{"command":');
  const long = '{"content":"line one\nline two\nline three"}';
  const got = toolSummary({ parameters: long });
  assert.equal(got, '…' + long.replace(/\n/g, '\\n').slice(-30));
  assert.ok(!got.includes('\n'));
  // A call waiting for approval: its request's compact parameters.
  assert.equal(toolSummary({ parameters: '{"command":"ls"}' }, 'ls'), 'ls');
  assert.equal(toolSummary({ compactParams: 'ls -la', parameters: '{}' }, 'ls'), 'ls -la');
});
