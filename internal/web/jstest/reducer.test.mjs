// The JavaScript reducer against the protocol's JSON vectors: the normative
// ones and the project's own (protocol/testdata/vectors). Run with
//   node --test internal/web/jstest/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

import { List, ResyncError, STALE } from '../static/reducer.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'protocol', 'testdata', 'vectors');

function vectorFiles() {
  const files = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.json')) files.push(join(dir, e.name));
    }
  };
  walk(root);
  return files.sort();
}

const files = vectorFiles();

test('finds the vector files', () => {
  assert.ok(files.length >= 9, `only ${files.length} vector files under ${root}`);
  assert.ok(files.some((f) => f.includes('normative')), 'no normative vectors');
});

function applyAll(list, events) {
  for (const ev of events) {
    const r = list.apply(ev.method, ev.params);
    assert.ok(r === STALE || typeof r.kind === 'string');
  }
}

for (const file of files) {
  const v = JSON.parse(readFileSync(file, 'utf8'));
  const name = `${basename(dirname(file))}/${basename(file)}`;

  test(`vector ${name}`, () => {
    const list = new List(v.start || undefined);
    applyAll(list, v.events);
    assert.deepEqual(list.snapshot(), v.expected);
  });

  // The same events after a buffering stage that concatenates adjacent
  // deltas of one block (protocol.Merge's text rule): a merged event carries
  // firstSeq, and the result must not change. A merged event that straddles
  // the start snapshot cannot be applied and demands a resync.
  test(`vector ${name}, merged`, () => {
    const merged = mergeAdjacent(v.events);
    const list = new List(v.start || undefined);
    for (const ev of merged) {
      try {
        list.apply(ev.method, ev.params);
      } catch (e) {
        assert.ok(e instanceof ResyncError && e.kind === 'gap' && v.start, `unexpected ${e}`);
        list.reset(v.start);
      }
    }
    if (!v.start) assert.deepEqual(list.snapshot(), v.expected);
  });
}

// mergeAdjacent merges adjacent streaming text/reasoning deltas of one
// block, as protocol.Merge does.
function mergeAdjacent(events) {
  const out = [];
  for (const ev of events) {
    const prev = out[out.length - 1];
    const p = ev.params;
    if (prev && prev.method === ev.method &&
        (ev.method === 'assistantContentUpdated' || ev.method === 'assistantReasoningUpdated') &&
        prev.params.messageId === p.messageId && prev.params.blockIndex === p.blockIndex &&
        (prev.params.parentToolId || '') === (p.parentToolId || '') &&
        prev.params.stage === 'streaming' && p.stage === 'streaming' && p.seq === prev.params.seq + 1) {
      prev.params = {
        ...prev.params,
        firstSeq: prev.params.firstSeq || prev.params.seq,
        seq: p.seq,
        chunk: prev.params.chunk + p.chunk,
        startedAt: prev.params.startedAt || p.startedAt,
      };
      if (!prev.params.startedAt) delete prev.params.startedAt;
      continue;
    }
    out.push({ method: ev.method, params: { ...p } });
  }
  return out;
}

const msg = (id, role = 'assistant') => ({ id, role, createdAt: 1, blocks: [] });

test('stale events are dropped, a gap demands a resync and changes nothing', () => {
  const list = new List({ messages: [msg('a1')], seq: 5 });
  assert.equal(list.apply('assistantContentUpdated', { sessionId: 's', seq: 5, messageId: 'a1', blockIndex: 0, chunk: 'x', stage: 'streaming' }), STALE);
  assert.throws(() => list.apply('assistantContentUpdated', { sessionId: 's', seq: 7, messageId: 'a1', blockIndex: 0, chunk: 'x', stage: 'streaming' }),
    (e) => e instanceof ResyncError && e.kind === 'gap');
  // A merged event covering 5..7 overlaps what the list holds.
  assert.throws(() => list.apply('assistantContentUpdated', { sessionId: 's', seq: 7, firstSeq: 5, messageId: 'a1', blockIndex: 0, chunk: 'x', stage: 'streaming' }),
    (e) => e instanceof ResyncError && e.kind === 'gap');
  assert.deepEqual(list.snapshot(), { messages: [msg('a1')], seq: 5, running: false, pendingPermissions: [] });
});

test('an event that does not fit the list demands a resync and changes nothing', () => {
  const cases = [
    ['assistantContentUpdated', { messageId: 'nope', blockIndex: 0, chunk: 'x', stage: 'streaming' }],
    ['assistantContentUpdated', { messageId: 'a1', blockIndex: 2, chunk: 'x', stage: 'streaming' }],
    ['assistantReasoningUpdated', { messageId: 'a1', blockIndex: 0, chunk: 'x', stage: 'streaming' }],
    ['toolBlockUpdated', { messageId: 'a1', blockIndex: 0, toolId: 't', name: 'Bash', stage: 'start' }],
    ['errorBlockAdded', { messageId: 'a1', blockIndex: 3, error: 'x' }],
    ['turnEnded', { messageId: 'nope', stopReason: 'end_turn' }],
    ['messagesRewound', { anchorMessageId: 'nope' }],
    ['compactBlockAdded', {}], // an older server's, without its message
    ['compactBlockAdded', { message: { role: 'assistant', blocks: [] } }],
    ['noSuchEvent', {}],
    ['userMessageAdded', { parentToolId: 't9', message: msg('c1', 'user') }],
    ['assistantContentUpdated', { parentToolId: 'a1', messageId: 'a1', blockIndex: 0, chunk: 'x', stage: 'streaming' }],
  ];
  for (const [method, params] of cases) {
    const start = { messages: [{ ...msg('a1'), blocks: [{ type: 'text', content: 'hi', stage: 'streaming' }] }], seq: 1, running: true, pendingPermissions: [] };
    const list = new List(start);
    assert.throws(() => list.apply(method, { sessionId: 's', seq: 2, ...params }),
      (e) => e instanceof ResyncError && e.kind === 'inconsistent', method);
    assert.deepEqual(list.snapshot(), start, method);
  }
});

test('apply reports what changed, for incremental rendering', () => {
  const list = new List();
  let seq = 0;
  const ap = (method, params) => list.apply(method, { sessionId: 's', seq: ++seq, ...params });
  assert.deepEqual(ap('userMessageAdded', { message: { ...msg('u1', 'user'), blocks: [{ type: 'text', content: 'q' }] } }), { kind: 'append', index: 0 });
  assert.deepEqual(ap('assistantMessageAdded', { message: msg('a1') }), { kind: 'append', index: 1 });
  assert.deepEqual(ap('assistantContentUpdated', { messageId: 'a1', blockIndex: 0, chunk: 'A', stage: 'streaming' }), { kind: 'block', index: 1, block: 0 });
  assert.deepEqual(ap('runStateChanged', { state: 'running' }), { kind: 'run' });
  assert.equal(list.running, true);
  const req = { requestId: 'r1', messageId: 'a1', blockIndex: 1, toolId: 't1', name: 'Bash', parameters: '{}' };
  assert.deepEqual(ap('permissionRequest', req), { kind: 'permissions' });
  assert.deepEqual(list.pendingPermissions, [{ sessionId: 's', seq, ...req }]);
  assert.deepEqual(ap('permissionResolved', { requestId: 'nope', decision: 'allow' }), { kind: 'none' });
  assert.deepEqual(ap('permissionResolved', { requestId: 'r1', decision: 'allow' }), { kind: 'permissions' });
  assert.deepEqual(list.pendingPermissions, []);
  assert.deepEqual(ap('runStateChanged', { state: 'idle' }), { kind: 'run' });
  assert.equal(list.running, false);
  assert.deepEqual(ap('turnEnded', { messageId: 'a1', stopReason: 'end_turn', usage: { input_tokens: 3, output_tokens: 4 } }), { kind: 'message', index: 1 });
  assert.deepEqual(ap('assistantMessageDiscarded', { messageId: 'zz', reason: 'retry' }), { kind: 'none' });
  assert.deepEqual(ap('messagesRewound', { anchorMessageId: 'u1' }), { kind: 'truncate', index: 0 });
  assert.equal(list.seq, seq);
});

test("a child session's change is reported as its top-level tool block's", () => {
  const list = new List();
  let seq = 0;
  const ap = (method, params) => list.apply(method, { sessionId: 's', seq: ++seq, ...params });
  ap('userMessageAdded', { message: { ...msg('u1', 'user'), blocks: [{ type: 'text', content: 'q' }] } });
  ap('assistantMessageAdded', { message: msg('a1') });
  ap('assistantContentUpdated', { messageId: 'a1', blockIndex: 0, chunk: 'A', stage: 'end' });
  ap('toolBlockUpdated', { messageId: 'a1', blockIndex: 1, toolId: 't1', name: 'Agent', stage: 'start' });
  const at = { kind: 'block', index: 1, block: 1 };
  assert.deepEqual(ap('userMessageAdded', { parentToolId: 't1', message: msg('c1', 'user') }), at);
  assert.deepEqual(ap('assistantMessageAdded', { parentToolId: 't1', message: msg('c2') }), at);
  assert.deepEqual(ap('toolBlockUpdated', { parentToolId: 't1', messageId: 'c2', blockIndex: 0, toolId: 'g1', name: 'Agent', stage: 'start' }), at);
  assert.deepEqual(ap('assistantMessageAdded', { parentToolId: 'g1', message: msg('d1') }), at);
  assert.deepEqual(ap('assistantContentUpdated', { parentToolId: 'g1', messageId: 'd1', blockIndex: 0, chunk: 'deep', stage: 'streaming' }), at);
  assert.deepEqual(ap('assistantMessageDiscarded', { parentToolId: 't1', messageId: 'c2', reason: 'retry' }), at);
  assert.deepEqual(ap('runStateChanged', { parentToolId: 't1', state: 'idle' }), { kind: 'none' });
  assert.equal(list.messages[1].blocks[1].messages.length, 1);
  // The grandchild went with its parent's message.
  assert.throws(() => ap('assistantContentUpdated', { parentToolId: 'g1', messageId: 'd1', blockIndex: 0, chunk: 'x', stage: 'streaming' }),
    (e) => e instanceof ResyncError && e.kind === 'inconsistent');
});

test('snapshots are copies: changing one never changes the list', () => {
  const list = new List({ messages: [{ ...msg('a1'), blocks: [{ type: 'text', content: 'x' }] }], seq: 1 });
  const s = list.snapshot();
  s.messages[0].blocks[0].content = 'changed';
  s.messages.push(msg('b'));
  assert.equal(list.messages[0].blocks[0].content, 'x');
  assert.equal(list.messages.length, 1);
});
