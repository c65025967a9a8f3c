// The session reducer: the JavaScript port of Go's protocol.List, the one
// function that applies session events to a message list (DESIGN.md §2).
// It must pass the same JSON vectors as the Go reducer
// (protocol/testdata/vectors), so it mirrors protocol/list.go rule by rule,
// and the list it holds is always in the Go wire shape (protocol.Block's
// MarshalJSON): a snapshot() of it compares equal to getMessages.
//
// apply() also says what changed, so that the page re-renders only the
// block a delta touched instead of the whole list.

// The event methods the reducer knows (protocol/event.go).
export const EVENT_METHODS = new Set([
  'userMessageAdded', 'assistantMessageAdded', 'assistantContentUpdated',
  'assistantReasoningUpdated', 'toolBlockUpdated', 'errorBlockAdded',
  'compactBlockAdded', 'assistantMessageDiscarded', 'turnEnded',
  'messagesRewound', 'messagesCleared', 'runStateChanged', 'streamNotice',
  'permissionRequest', 'permissionResolved', 'queueChanged', 'taskUpdated',
  'compactionUpdated',
]);

// ResyncError means the list cannot take an event: events were lost
// (kind "gap") or the event does not fit the list ("inconsistent"). The
// list is unchanged; the consumer must pull a snapshot.
export class ResyncError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'ResyncError';
    this.kind = kind;
  }
}

// STALE is returned by apply for an event already reflected in the list.
export const STALE = Object.freeze({ kind: 'stale' });

const TOOL_STAGE_ORDER = { start: 1, streaming: 2, running: 3, end: 4 };
const toolStageOrder = (s) => TOOL_STAGE_ORDER[s] || 0;

const str = (v) => (typeof v === 'string' ? v : '');
const int = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

// normUsage copies a usage object in protocol.Usage's JSON shape.
function normUsage(u) {
  const out = { input_tokens: int(u.input_tokens), output_tokens: int(u.output_tokens) };
  if (int(u.cache_creation_input_tokens)) out.cache_creation_input_tokens = int(u.cache_creation_input_tokens);
  if (int(u.cache_read_input_tokens)) out.cache_read_input_tokens = int(u.cache_read_input_tokens);
  return out;
}

// normBlock copies a block in protocol.Block's JSON shape: content always on
// text-like blocks, parameters always on tool blocks, result on a tool block
// when non-empty or ended, every other field only when set.
export function normBlock(b) {
  const out = { type: str(b.type) };
  const tool = out.type === 'tool';
  if (!tool) out.content = str(b.content);
  if (str(b.stage)) out.stage = b.stage;
  if (int(b.startedAt)) out.startedAt = b.startedAt;
  if (int(b.endedAt)) out.endedAt = b.endedAt;
  if (str(b.toolId)) out.toolId = b.toolId;
  if (str(b.name)) out.name = b.name;
  if (tool) out.parameters = str(b.parameters);
  if (str(b.compactParams)) out.compactParams = b.compactParams;
  if (tool && (str(b.result) !== '' || out.stage === 'end')) out.result = str(b.result);
  if (str(b.shortResult)) out.shortResult = b.shortResult;
  if (typeof b.success === 'boolean') out.success = b.success;
  if (str(b.error)) out.error = b.error;
  if (tool && str(b.oldText)) out.oldText = b.oldText;
  // The messages of the child session (a subagent) the tool's call runs.
  if (tool && Array.isArray(b.messages) && b.messages.length) out.messages = b.messages.map(normMessage);
  return out;
}

// normMessage copies a message in protocol.Message's JSON shape.
export function normMessage(m) {
  const out = {
    id: str(m.id),
    role: str(m.role),
    createdAt: int(m.createdAt),
    blocks: Array.isArray(m.blocks) ? m.blocks.map(normBlock) : [],
  };
  if (str(m.stopReason)) out.stopReason = m.stopReason;
  if (m.usage && typeof m.usage === 'object') out.usage = normUsage(m.usage);
  return out;
}

// normPermission copies a permissionRequest's params in
// protocol.PermissionRequest's JSON shape.
export function normPermission(p) {
  const out = { sessionId: str(p.sessionId), seq: int(p.seq) };
  if (int(p.firstSeq)) out.firstSeq = p.firstSeq;
  if (str(p.parentToolId)) out.parentToolId = p.parentToolId;
  Object.assign(out, {
    requestId: str(p.requestId),
    messageId: str(p.messageId),
    blockIndex: int(p.blockIndex),
    toolId: str(p.toolId),
    name: str(p.name),
    parameters: str(p.parameters),
  });
  if (str(p.compactParams)) out.compactParams = p.compactParams;
  if (str(p.reason)) out.reason = p.reason;
  if (str(p.oldText)) out.oldText = p.oldText;
  return out;
}

// normCompaction copies a compaction in progress in protocol.Compaction's
// JSON shape.
function normCompaction(c) {
  const out = { chars: int(c.chars) };
  if (int(c.startedAt)) out.startedAt = c.startedAt;
  return out;
}

// normQueued copies a piece of queued work in protocol.QueuedWork's JSON
// shape.
function normQueued(q) {
  const out = {};
  if (str(q.messageId)) out.messageId = q.messageId;
  out.kind = str(q.kind);
  if (str(q.text)) out.text = q.text;
  return out;
}

// normTask copies a background task in protocol.Task's JSON shape.
function normTask(t) {
  const out = { taskId: str(t.taskId), description: str(t.description) };
  if (int(t.startedAt)) out.startedAt = t.startedAt;
  if (str(t.toolId)) out.toolId = t.toolId;
  if (str(t.shortResult)) out.shortResult = t.shortResult;
  return out;
}

const list = (v, norm) => (Array.isArray(v) ? v.map(norm) : []);

// List is a consumer's copy of a session's view state: its messages,
// whether the agent is running and the permission requests that wait for
// an answer. What it holds is owned by the list: read it, never modify it.
//
// The messages of a child session (a subagent) hang under the tool block
// whose call runs it (block.messages): an event with parentToolId applies
// to the nested list of the tool block with that toolId, found depth first
// (a block before the messages nested in it, in list order), by the same
// rules as at the top.
export class List {
  // #found caches what a parentToolId resolves to ({level, index, block}:
  // the nested list, and the top-level block it hangs under). An entry is
  // dropped whenever that could change: a block or message removed or
  // replaced, a tool block added or given an id.
  #found = new Map();

  constructor(snap) {
    this.seq = 0;
    this.messages = [];
    this.running = false;
    this.pendingPermissions = [];
    this.queued = [];
    this.tasks = [];
    this.compaction = null;
    if (snap) this.reset(snap);
  }

  // reset replaces the list with a copy of a snapshot
  // {messages, seq, running, pendingPermissions, queued?, tasks?}.
  reset(snap) {
    this.seq = int(snap.seq);
    this.messages = (snap.messages || []).map(normMessage);
    this.#found.clear();
    this.running = snap.running === true;
    this.pendingPermissions = Array.isArray(snap.pendingPermissions) ? snap.pendingPermissions.map(normPermission) : [];
    this.queued = list(snap.queued, normQueued);
    this.tasks = list(snap.tasks, normTask);
    this.compaction = snap.compaction ? normCompaction(snap.compaction) : null;
  }

  // snapshot returns a deep copy of the view state and its seq; queued and
  // tasks are absent when empty, as in Go's protocol.Snapshot.
  snapshot() {
    const out = {
      messages: this.messages.map(normMessage),
      seq: this.seq,
      running: this.running,
      pendingPermissions: this.pendingPermissions.map(normPermission),
    };
    if (this.queued.length) out.queued = this.queued.map(normQueued);
    if (this.tasks.length) out.tasks = this.tasks.map(normTask);
    if (this.compaction) out.compaction = normCompaction(this.compaction);
    return out;
  }

  // index returns the index of the last message with the given id, or -1.
  index(id) {
    return indexIn(this.messages, id);
  }

  // apply applies one event, given as its wire method and params. It returns
  // STALE for an event already reflected, otherwise a change:
  //   {kind: 'none'}                       nothing visible in the list
  //   {kind: 'run'}                        the run state changed
  //   {kind: 'permissions'}                pendingPermissions changed
  //   {kind: 'queue'}                      queued changed
  //   {kind: 'tasks'}                      tasks changed
  //   {kind: 'compaction'}                 the compaction in progress changed
  //   {kind: 'append', index}              messages from index on are new
  //   {kind: 'message', index}             message index changed (not its block count)
  //   {kind: 'block', index, block}        block of message index changed or was added
  //   {kind: 'remove', index}              message index was removed
  //   {kind: 'truncate', index}            messages from index on were removed
  // It throws a ResyncError (list unchanged) when the list cannot take it.
  apply(method, p) {
    const seq = int(p && p.seq);
    if (seq <= this.seq) return STALE;
    const from = int(p.firstSeq) || seq;
    if (from !== this.seq + 1) {
      throw new ResyncError('gap', `holding seq ${this.seq}, got ${method} covering ${from}..${seq}`);
    }
    let change;
    try {
      change = this.#apply(method, p);
    } catch (e) {
      if (e instanceof ResyncError) throw e;
      throw new ResyncError('inconsistent', `${method} (seq ${seq}): ${e.message}`);
    }
    this.seq = seq;
    return change;
  }

  #apply(method, p) {
    // The session-wide state: a child's run state, queue and notices
    // change nothing, its permission requests and background tasks are the
    // session's.
    switch (method) {
      case 'runStateChanged':
        if (str(p.parentToolId)) return { kind: 'none' };
        this.running = str(p.state) === 'running';
        return { kind: 'run' };
      case 'permissionRequest':
        this.pendingPermissions.push(normPermission(p));
        return { kind: 'permissions' };
      case 'permissionResolved': {
        // A resolution of a request never held changes nothing.
        const id = str(p.requestId);
        const n = this.pendingPermissions.length;
        this.pendingPermissions = this.pendingPermissions.filter((r) => r.requestId !== id);
        return this.pendingPermissions.length === n ? { kind: 'none' } : { kind: 'permissions' };
      }
      case 'queueChanged':
        if (str(p.parentToolId)) return { kind: 'none' };
        this.queued = list(p.queued, normQueued);
        return { kind: 'queue' };
      case 'taskUpdated': {
        // A running task held is replaced where it is; an end of a task
        // never held changes nothing.
        const i = this.tasks.findIndex((t) => t.taskId === str(p.taskId));
        const running = str(p.state) === 'running';
        if (running && i >= 0) this.tasks[i] = normTask(p);
        else if (running) this.tasks.push(normTask(p));
        else if (i >= 0) this.tasks.splice(i, 1);
        else return { kind: 'none' };
        return { kind: 'tasks' };
      }
      case 'compactionUpdated': {
        // A start (again, after a retry) sets the length back to 0;
        // streaming chunks add to it; the end clears it.
        if (str(p.parentToolId)) return { kind: 'none' };
        const stage = str(p.stage);
        if (stage === 'start') this.compaction = { startedAt: int(p.startedAt), chars: 0 };
        else if (stage === 'end') this.compaction = null;
        else {
          this.compaction = this.compaction || { startedAt: 0, chars: 0 };
          this.compaction.chars += int(p.chars);
        }
        return { kind: 'compaction' };
      }
      case 'streamNotice':
        return { kind: 'none' };
    }
    const parent = str(p.parentToolId);
    let level = this.messages;
    let at = null; // for a child's event: the top-level block it hangs under
    if (parent) {
      at = this.#child(parent);
      if (!at) throw new Error(`no tool block "${parent}" for a child session`);
      level = at.level;
    }
    // A change inside a child session is a change of its top-level block.
    const report = (change) => (at ? { kind: 'block', index: at.index, block: at.block } : change);
    switch (method) {
      case 'compactBlockAdded':
        // An older server sent the summary without its message: appending
        // an empty one would show nothing; a snapshot has it.
        if (!p.message || !str(p.message.id)) throw new Error('no message');
        this.#push(level, p.message);
        return report({ kind: 'append', index: level.length - 1 });
      case 'userMessageAdded':
      case 'assistantMessageAdded':
        this.#push(level, p.message || {});
        return report({ kind: 'append', index: level.length - 1 });
      case 'assistantContentUpdated':
      case 'assistantReasoningUpdated': {
        const reasoning = method === 'assistantReasoningUpdated';
        const [i, b] = block(level, str(p.messageId), int(p.blockIndex), reasoning ? 'reasoning' : 'text');
        const blk = level[i].blocks[b];
        blk.content += str(p.chunk);
        if (str(p.stage)) blk.stage = p.stage; else delete blk.stage;
        if (reasoning) {
          if (int(p.startedAt)) blk.startedAt = p.startedAt;
          if (int(p.endedAt)) blk.endedAt = p.endedAt;
        }
        return report({ kind: 'block', index: i, block: b });
      }
      case 'toolBlockUpdated': {
        const [i, b] = block(level, str(p.messageId), int(p.blockIndex), 'tool');
        const blk = level[i].blocks[b];
        if (str(p.toolId) && p.toolId !== str(blk.toolId)) {
          // A block joins those a parentToolId may name.
          this.#found.delete(str(blk.toolId));
          this.#found.delete(p.toolId);
        }
        applyTool(blk, p);
        return report({ kind: 'block', index: i, block: b });
      }
      case 'errorBlockAdded': {
        const i = message(level, str(p.messageId));
        const m = level[i];
        const b = int(p.blockIndex);
        if (b < 0 || b > m.blocks.length) {
          throw new Error(`block ${b} beyond the ${m.blocks.length} of message "${m.id}"`);
        }
        if (b < m.blocks.length) this.#found.clear();
        m.blocks[b] = { type: 'error', content: str(p.error) };
        return report({ kind: 'block', index: i, block: b });
      }
      case 'turnEnded': {
        const i = message(level, str(p.messageId));
        const m = level[i];
        if (str(p.stopReason)) m.stopReason = p.stopReason; else delete m.stopReason;
        if (p.usage && typeof p.usage === 'object') m.usage = normUsage(p.usage);
        return report({ kind: 'message', index: i });
      }
      case 'assistantMessageDiscarded': {
        const i = indexIn(level, str(p.messageId));
        if (i < 0) return { kind: 'none' };
        level.splice(i, 1);
        this.#found.clear();
        return report({ kind: 'remove', index: i });
      }
      case 'messagesRewound': {
        const i = indexIn(level, str(p.anchorMessageId));
        if (i < 0) throw new Error(`no anchor message "${str(p.anchorMessageId)}"`);
        level.length = i;
        this.#found.clear();
        return report({ kind: 'truncate', index: i });
      }
      case 'messagesCleared':
        if (at) level.length = 0; else this.messages = [];
        this.#found.clear();
        return report({ kind: 'truncate', index: 0 });
      default:
        throw new Error(`unknown event ${method}`);
    }
  }

  // #push appends a message to a level. A message that brings tool blocks
  // may hold an id that a cached parentToolId now resolves to differently.
  #push(level, m) {
    const n = normMessage(m);
    if (n.blocks.some((b) => b.type === 'tool')) this.#found.clear();
    level.push(n);
  }

  // #child returns {level, index, block} for the tool block a parentToolId
  // names (its nested list, created empty, and the top-level block it is
  // or hangs under), or null when no block has that id.
  #child(toolId) {
    let at = this.#found.get(toolId);
    if (at) return at;
    for (let i = 0; i < this.messages.length && !at; i++) {
      const blocks = this.messages[i].blocks;
      for (let b = 0; b < blocks.length && !at; b++) {
        const blk = find(blocks[b], toolId);
        if (blk) {
          if (!Array.isArray(blk.messages)) blk.messages = [];
          at = { level: blk.messages, index: i, block: b };
        }
      }
    }
    if (at) this.#found.set(toolId, at);
    return at;
  }
}

// find returns the first tool block with the given id, depth first, among
// blk and the blocks nested in it.
function find(blk, toolId) {
  if (blk.type !== 'tool') return null;
  if (str(blk.toolId) === toolId) return blk;
  for (const m of blk.messages || []) {
    for (const b of m.blocks) {
      const found = find(b, toolId);
      if (found) return found;
    }
  }
  return null;
}

function indexIn(level, id) {
  for (let i = level.length - 1; i >= 0; i--) {
    if (level[i].id === id) return i;
  }
  return -1;
}

function message(level, id) {
  const i = indexIn(level, id);
  if (i < 0) throw new Error(`no message "${id}"`);
  return i;
}

// block finds block b of message id, creating it with type t when b is
// the next index.
function block(level, id, b, t) {
  const i = message(level, id);
  const m = level[i];
  if (b === m.blocks.length) {
    m.blocks.push(normBlock({ type: t }));
  } else if (b < 0 || b > m.blocks.length) {
    throw new Error(`block ${b} beyond the ${m.blocks.length} of message "${id}"`);
  } else if (m.blocks[b].type !== t) {
    throw new Error(`block ${b} of message "${id}" is ${m.blocks[b].type}, not ${t}`);
  }
  return [i, b];
}

function applyTool(blk, p) {
  if (str(p.toolId)) blk.toolId = p.toolId;
  if (str(p.name)) blk.name = p.name;
  const stage = str(p.stage);
  // Stages only go forward: a late parameter chunk must not corrupt the
  // authoritative parameters a running or ended block already holds.
  if (toolStageOrder(stage) < toolStageOrder(blk.stage)) return;
  if (stage) blk.stage = stage; else delete blk.stage;
  if (stage === 'streaming') {
    blk.parameters += str(p.parametersChunk);
    fixResult(blk);
    return;
  }
  if (str(p.parameters)) blk.parameters = p.parameters;
  if (str(p.compactParams)) blk.compactParams = p.compactParams;
  if (str(p.resultChunk)) blk.result = str(blk.result) + p.resultChunk;
  if (str(p.shortResult)) blk.shortResult = p.shortResult;
  if (str(p.oldText)) blk.oldText = p.oldText;
  if (typeof p.result === 'string') blk.result = p.result;
  if (typeof p.success === 'boolean') blk.success = p.success;
  if (str(p.error)) blk.error = p.error;
  fixResult(blk);
}

// fixResult keeps a tool block's result field in the wire shape: present
// when non-empty or when the block has ended.
function fixResult(blk) {
  if (str(blk.result) === '' && blk.stage !== 'end') delete blk.result;
  else blk.result = str(blk.result);
}
