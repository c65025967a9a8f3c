// The page: one session of the agent, live. It is seed 000's webview over
// the JSON-RPC host protocol:
//   - a snapshot replaces the list on load (initialize), clear, restore and
//     resync, and only then;
//   - every other change is an event applied by the reducer and drawn in
//     place (deltas append, compactBlockAdded appends, messagesRewound
//     truncates);
//   - a lost connection resumes with initialize {sessionId, lastSeq,
//     epoch}: the server sends exactly the missed events, or a snapshot;
//   - a gap in seq (or an event that does not fit) pulls a snapshot;
//   - rewind carries a request id; its receipt only reports the outcome
//     (the list is cut by messagesRewound) and a receipt for another
//     request is ignored.
// Around it: a first screen for an empty session (where and with which
// model the agent works, example prompts), the session's title from its
// first prompt, a banner while the connection is down, a confirmation
// before a rewind, and a list of the stored sessions to search.

import { List, ResyncError, STALE, EVENT_METHODS } from './reducer.js';
import { View, textOf } from './view.js';
import { Rpc, RpcError } from './rpc.js';

// CODE_SESSION_NOT_FOUND is the server's answer for an unknown session id.
const CODE_SESSION_NOT_FOUND = -32001;

const $ = (id) => document.getElementById(id);
const els = {
  messages: $('messages'), input: $('input'), composer: $('composer'), send: $('btn-send'),
  abort: $('btn-abort'), clear: $('btn-clear'), compact: $('btn-compact'), newSession: $('btn-new'),
  sessionsBtn: $('btn-sessions'), sessions: $('sessions'), sessionList: $('session-list'),
  conn: $('conn'), run: $('run'), notice: $('notice'), permissions: $('permissions'), title: $('session-title'),
  btw: $('btw'), tasks: $('tasks'), queue: $('queue'), banner: $('banner'), welcome: $('welcome'),
  where: $('welcome-where'), examples: $('examples'), search: $('session-search'),
  confirm: $('confirm'), confirmText: $('confirm-text'), closeSessions: $('btn-close-sessions'),
};

const state = {
  rpc: null,
  sessionId: new URLSearchParams(location.hash.slice(1)).get('session') || '',
  epoch: '',
  // haveList: the list reflects the session up to list.seq, so a
  // reconnect can ask for the events after it.
  haveList: false,
  resyncing: false,
  rewind: null, // {requestId, text}: the rewind in flight
  sessions: [], // listSessions' answer, for the search box
  // wasConnected: a connection was up, so a closed one is a lost one.
  wasConnected: false,
  // stats count how the list was brought up to date: whole snapshots, and
  // reconnects that resumed from the events the page missed.
  stats: { snapshots: 0, resumes: 0, resyncs: 0 },
};
const list = new List();
const view = new View(els.messages, { onRewind: (m) => rewind(m) });

let nextRequest = 1;
const requestId = () => (crypto.randomUUID ? crypto.randomUUID() : `r${Date.now()}-${nextRequest++}`);

// ---- connection -------------------------------------------------------

function wsURL() {
  const u = new URL('/ws', location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const token = new URLSearchParams(location.search).get('token');
  if (token) u.searchParams.set('token', token);
  return u.href;
}

function setConn(s) {
  els.conn.dataset.state = s;
  els.conn.title = s;
  // The banner says the page is not live; it goes once the session is
  // attached again (and brought up to date from the events missed).
  els.banner.hidden = s !== 'reconnecting';
}

async function connectLoop() {
  let delay = 100;
  for (;;) {
    const rpc = new Rpc(wsURL(), onNotification);
    try {
      await rpc.opened;
      state.rpc = rpc;
      await attach();
      setConn('connected');
      state.wasConnected = true;
      delay = 100;
    } catch (e) {
      if (e instanceof RpcError && e.code === CODE_SESSION_NOT_FOUND && state.sessionId) {
        // The session in the URL is gone (not stored, or deleted): start a
        // new one rather than asking for it for ever.
        showNotice(`session ${state.sessionId} not found; this is a new session`);
        state.sessionId = '';
        state.haveList = false;
        try {
          await attach();
          setConn('connected');
          state.wasConnected = true;
          delay = 100;
        } catch (e2) {
          console.warn('sluice:', e2.message);
          rpc.close();
        }
      } else {
        console.warn('sluice:', e.message);
        rpc.close();
      }
    }
    await rpc.closed;
    state.rpc = null;
    state.resyncing = false;
    setConn(state.wasConnected ? 'reconnecting' : 'connecting');
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// attach initializes the connection on the current session (a new one when
// there is none), resuming after list.seq when the list is whole.
async function attach() {
  const params = { clientInfo: { name: 'sluice-web' } };
  if (state.sessionId) {
    params.sessionId = state.sessionId;
    if (state.haveList) {
      params.lastSeq = list.seq;
      if (state.epoch) params.epoch = state.epoch;
    }
  }
  adopt(await state.rpc.call('initialize', params));
}

// adopt takes an initialize or restoreSession result.
function adopt(res) {
  const switched = res.sessionId !== state.sessionId;
  state.sessionId = res.sessionId;
  state.epoch = res.epoch || '';
  if (res.snapshot) {
    replace(res.snapshot);
  } else if (switched || !state.haveList || res.seq !== list.seq) {
    // Resumed, but not from what this page holds: pull the whole list.
    resync();
  } else {
    state.stats.resumes++;
  }
  state.info = { workingDirectory: res.workingDirectory || '', model: res.model || '' };
  showTitle();
  showWelcome();
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('session') !== res.sessionId) {
    hash.set('session', res.sessionId);
    history.replaceState(null, '', '#' + hash.toString());
  }
}

function replace(snapshot) {
  state.stats.snapshots++;
  list.reset(snapshot);
  view.reset(list);
  state.haveList = true;
  showTitle();
  showWelcome();
  showRunState();
  showPermissions();
  showQueue();
  showTasks();
}

// resync replaces the list with getMessages. Events that arrive before the
// answer are covered by it (the server answers after them), so they are
// dropped meanwhile; the ones after it apply on top.
async function resync() {
  if (state.resyncing || !state.rpc) return;
  state.resyncing = true;
  state.haveList = false;
  state.stats.resyncs++;
  try {
    replace(await state.rpc.call('getMessages', { sessionId: state.sessionId }));
  } catch (e) {
    showNotice(`could not reload the session: ${e.message}`);
  } finally {
    state.resyncing = false;
  }
}

function onNotification(method, params) {
  if (!EVENT_METHODS.has(method) || params.sessionId !== state.sessionId) return;
  if (state.resyncing || !state.haveList) return;
  let change;
  try {
    change = list.apply(method, params);
  } catch (e) {
    if (!(e instanceof ResyncError)) throw e;
    console.warn('sluice: resync:', e.message);
    resync();
    return;
  }
  if (change === STALE) return;
  view.apply(list, change);
  if (change.kind === 'append' || change.kind === 'truncate' || change.kind === 'remove') {
    showTitle();
    showWelcome();
  }
  if (change.kind === 'run' || change.kind === 'compaction') showRunState();
  if (change.kind === 'permissions') {
    showPermissions();
    showRunState();
  }
  if (change.kind === 'queue') showQueue();
  if (change.kind === 'tasks') showTasks();
  switch (method) {
    case 'streamNotice':
      showNotice(params.kind === 'retrying'
        ? `retrying (attempt ${params.attempt || 1}) in ${((params.delayMs || 0) / 1000).toFixed(1)}s: ${params.cause || 'stream failed'}`
        : `no data from the model for ${Math.round((params.idleMs || 0) / 1000)}s…`);
      break;
    case 'assistantContentUpdated':
    case 'assistantReasoningUpdated':
    case 'toolBlockUpdated':
    case 'turnEnded':
      hideNotice();
      break;
  }
}

// ---- actions ----------------------------------------------------------

function call(method, params) {
  if (!state.rpc) return Promise.reject(new Error('not connected'));
  return state.rpc.call(method, { sessionId: state.sessionId, ...params });
}

function report(p) {
  p.catch((e) => showNotice(e.message));
  return p;
}

function submit() {
  const text = els.input.value;
  if (!text.trim()) return;
  const t = text.trim();
  if (t === '/clear') clearSession();
  else if (t === '/compact') compact();
  else if (t.startsWith('!')) report(call('bang', { command: t.slice(1).trim() }));
  else if (t === '/btw' || t.startsWith('/btw ')) askAside(t.slice(4).trim());
  else report(call('sendMessage', { text }));
  els.input.value = '';
  fitInput();
}

// askAside asks a side question (/btw): the answer shows under the
// transcript and never enters the session.
async function askAside(question) {
  if (!question) {
    showNotice('/btw needs a question: /btw what does this function return?');
    return;
  }
  els.btw.textContent = `btw: ${question}\n…`;
  els.btw.hidden = false;
  try {
    const res = await call('ask', { question });
    els.btw.textContent = `btw: ${question}\n${res.answer}`;
  } catch (e) {
    els.btw.textContent = `btw: ${question}\n(${e.message})`;
  }
}

function abort() {
  report(call('abort', { reason: 'stopped from the web page' }));
}

async function clearSession() {
  const res = await report(call('clear', {}));
  const snap = res && (res.snapshot || (Array.isArray(res.messages) ? res : null));
  if (snap) replace(snap);
}

function compact() {
  report(call('compact', {}));
}

// confirm asks a yes-or-no question in the page's dialog and resolves to
// the answer (Esc and Cancel are no).
function confirm(text, action) {
  els.confirm.querySelector('[value="ok"]').textContent = action;
  els.confirmText.textContent = text;
  els.confirm.returnValue = '';
  els.confirm.showModal();
  return new Promise((resolve) => {
    els.confirm.addEventListener('close', () => resolve(els.confirm.returnValue === 'ok'), { once: true });
  });
}

// rewind asks to rewind to a user message, once the user confirmed. The
// list is cut by the messagesRewound event every attached page receives;
// the receipt only says whether it happened, and brings the message's text
// back to the input box.
async function rewind(msg) {
  const later = list.messages.length - 1 - list.messages.findIndex((m) => m.id === msg.id);
  const removed = later > 0 ? `This message and the ${later} after it will be removed` : 'This message will be removed';
  if (!(await confirm(`${removed}; its text comes back to the input box. Files the agent changed stay as they are.`, 'Rewind'))) return;
  const id = requestId();
  const text = msg.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('');
  state.rewind = { requestId: id, text };
  let res;
  try {
    res = await call('rewind', { messageId: msg.id, requestId: id });
  } catch (e) {
    if (state.rewind && state.rewind.requestId === id) state.rewind = null;
    showNotice(`rewind failed: ${e.message}`);
    return;
  }
  if (!state.rewind || !res || res.requestId !== state.rewind.requestId) return; // a stale receipt
  state.rewind = null;
  if (res.snapshot) replace(res.snapshot); // a server without receipts
  if (res.ok) {
    if (!els.input.value.trim()) els.input.value = text;
    els.input.focus();
  } else {
    showNotice(`rewind failed: ${res.error || 'unknown error'}`);
  }
}

async function newSession() {
  if (!state.rpc) return;
  const old = state.sessionId;
  state.haveList = false;
  state.sessionId = '';
  try {
    adopt(await state.rpc.call('initialize', { clientInfo: { name: 'sluice-web' } }));
  } catch (e) {
    state.sessionId = old;
    showNotice(e.message);
    return;
  }
  if (old && old !== state.sessionId) state.rpc.call('detach', { sessionId: old }).catch(() => {});
}

async function toggleSessions() {
  if (!els.sessions.hidden) {
    els.sessions.hidden = true;
    return;
  }
  const res = await report(state.rpc ? state.rpc.call('listSessions', {}) : Promise.reject(new Error('not connected')));
  state.sessions = (res && res.sessions) || [];
  els.search.value = '';
  showSessions();
  els.sessions.hidden = false;
  els.search.focus();
}

// showSessions lists the sessions whose title holds every word of the
// search box, newest first: the first line of each one's first prompt, and
// when it was last used.
function showSessions() {
  const words = els.search.value.toLowerCase().split(/\s+/).filter(Boolean);
  els.sessionList.replaceChildren();
  for (const s of state.sessions) {
    const title = (s.title || '').toLowerCase();
    if (!words.every((w) => title.includes(w))) continue;
    const li = document.createElement('li');
    li.dataset.id = s.id;
    const b = document.createElement('button');
    b.type = 'button';
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = s.firstLine || s.title || s.id;
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = `${s.live ? 'live · ' : ''}${when(s.modified)}`;
    b.title = s.title || s.id;
    b.append(name, meta);
    b.addEventListener('click', () => restore(s.id));
    li.append(b);
    if (s.id === state.sessionId) li.className = 'current';
    els.sessionList.append(li);
  }
  if (!els.sessionList.children.length) {
    const li = document.createElement('li');
    li.className = 'empty';
    li.textContent = state.sessions.length ? 'No session matches.' : 'No sessions yet: the ones you use are kept here.';
    els.sessionList.append(li);
  }
}

// when says how long ago a time (Unix ms) was, as a list of recent things
// says it.
function when(ms, now = Date.now()) {
  if (!ms) return '';
  const min = Math.floor((now - ms) / 60000);
  if (min < 1) return 'just now';
  if (min < 60) return `${min} min ago`;
  if (min < 24 * 60) return `${Math.floor(min / 60)} h ago`;
  const d = new Date(ms);
  const sameYear = d.getFullYear() === new Date(now).getFullYear();
  return d.toLocaleDateString(undefined, sameYear ? { month: 'short', day: 'numeric' } : { year: 'numeric', month: 'short', day: 'numeric' });
}

async function restore(id) {
  els.sessions.hidden = true;
  if (!state.rpc || id === state.sessionId) return;
  const old = state.sessionId;
  state.haveList = false;
  state.sessionId = id;
  try {
    adopt(await state.rpc.call('restoreSession', { sessionId: id }));
  } catch (e) {
    state.sessionId = old;
    showNotice(`could not restore: ${e.message}`);
    resync();
    return;
  }
  if (old && old !== id) state.rpc.call('detach', { sessionId: old }).catch(() => {});
}

// ---- chrome -----------------------------------------------------------

// compactionLabel says what a compaction in progress is doing: how long
// it has run and how long its summary is so far (as the terminal says it).
function compactionLabel(c, now = Date.now()) {
  let s = 'Compacting conversation…';
  if (c.startedAt > 0 && now >= c.startedAt) s += ` ${Math.floor((now - c.startedAt) / 1000)}s`;
  if (c.chars > 0) s += ` · ${c.chars} chars of summary`;
  return s;
}

// compactionTimer ticks the compaction label's elapsed time each second
// while a compaction runs.
let compactionTimer = 0;

// showRunState shows the run state the list holds: working, compacting
// the conversation, or waiting for the user to approve a tool call.
function showRunState() {
  const waiting = list.pendingPermissions.length > 0;
  const compacting = !waiting && list.compaction;
  els.run.hidden = !list.running && !waiting && !compacting;
  els.run.dataset.state = waiting ? 'waiting' : compacting ? 'compacting' : 'working';
  els.run.textContent = waiting ? 'Waiting for your approval' : compacting ? compactionLabel(list.compaction) : 'Working…';
  if (compacting && !compactionTimer) compactionTimer = setInterval(showRunState, 1000);
  if (!compacting && compactionTimer) {
    clearInterval(compactionTimer);
    compactionTimer = 0;
  }
  els.abort.hidden = !list.running;
  els.abort.disabled = !list.running;
  els.send.hidden = list.running && !els.input.value.trim();
  view.setAwaiting(list.pendingPermissions);
  if (!list.running) hideNotice();
}

// titleOf is a session's title: the first line of its first prompt.
function titleOf(messages) {
  const first = messages.find((m) => m.role === 'user');
  const text = first ? first.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('') : '';
  const line = text.split('\n').map((l) => l.trim()).find(Boolean) || '';
  return line.length > 80 ? line.slice(0, 79) + '…' : line;
}

function showTitle() {
  const t = titleOf(list.messages);
  els.title.textContent = t || 'New session';
  els.title.title = state.sessionId ? `session ${state.sessionId}` : '';
  document.title = t ? `${t} · sluice` : 'sluice';
}

// showWelcome shows the first screen while the session is empty: what
// this is, where the agent works and with which model, and prompts to
// start from.
function showWelcome() {
  const empty = state.haveList && list.messages.length === 0;
  els.welcome.hidden = !empty;
  els.messages.hidden = empty;
  if (!empty || !state.info) return;
  const parts = [];
  if (state.info.workingDirectory) parts.push(['Working in', state.info.workingDirectory]);
  parts.push(['Model', state.info.model || 'the provider’s default']);
  els.where.replaceChildren(...parts.map(([k, v]) => {
    const row = document.createElement('div');
    const key = document.createElement('span');
    key.className = 'key';
    key.textContent = k;
    const val = document.createElement('code');
    val.textContent = v;
    row.append(key, val);
    return row;
  }));
}

// showQueue lists the work waiting behind the run, as the list holds it
// (sent from any face); a message leaves it when it is sent.
function showQueue() {
  const texts = list.queued.map((q) => (q.kind === 'bang' ? `!${q.text || ''}` : q.kind === 'compact' ? '/compact' : q.text || ''));
  fillList(els.queue, texts);
}

// showTasks lists the background tasks running.
function showTasks() {
  fillList(els.tasks, list.tasks.map((t) => {
    const out = (t.shortResult || '').trimEnd().split('\n').pop().trim();
    return `${t.taskId} ${t.description.split('\n')[0]}${out ? ` · ${out}` : ''}`;
  }));
}

function fillList(ul, texts) {
  ul.replaceChildren(...texts.map((t) => {
    const li = document.createElement('li');
    li.textContent = t;
    return li;
  }));
  ul.hidden = texts.length === 0;
}

function showNotice(text) {
  els.notice.textContent = text;
  els.notice.hidden = false;
}

function hideNotice() {
  els.notice.hidden = true;
}

// showPermissions makes the prompts on the page those the list holds:
// a request that is no longer pending loses its prompt, a new one gets
// one, and a prompt already shown stays as it is.
function showPermissions() {
  const pending = new Set(list.pendingPermissions.map((p) => p.requestId));
  for (const box of [...els.permissions.children]) {
    if (!pending.has(box.dataset.requestId)) box.remove();
  }
  const shown = new Set([...els.permissions.children].map((b) => b.dataset.requestId));
  for (const p of list.pendingPermissions) {
    if (!shown.has(p.requestId)) els.permissions.append(permissionBox(p));
  }
}

// permissionBox is the prompt for one request. Answering disables its
// buttons; the prompt goes when permissionResolved removes the request
// from the list, and comes back to life if the answer failed.
function permissionBox(p) {
  const box = document.createElement('div');
  box.className = 'permission';
  box.dataset.requestId = p.requestId;
  const q = document.createElement('div');
  q.className = 'question';
  q.textContent = `Allow ${p.name || 'the tool'}: ${p.compactParams || p.parameters || ''}?`;
  box.append(q);
  if (p.reason) {
    const r = document.createElement('div');
    r.className = 'reason';
    r.textContent = p.reason;
    box.append(r);
  }
  const buttons = [];
  for (const [decision, label] of [['allow', 'Allow'], ['allow_always', 'Always allow'], ['deny', 'Deny']]) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.dataset.decision = decision;
    b.addEventListener('click', async () => {
      for (const x of buttons) x.disabled = true;
      try {
        await call('permissionResponse', { requestId: p.requestId, decision });
      } catch (e) {
        showNotice(e.message);
        for (const x of buttons) x.disabled = false;
      }
    });
    buttons.push(b);
    box.append(b);
  }
  return box;
}

els.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  submit();
});
els.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});
// The input box grows with its text, up to a third of the window.
function fitInput() {
  els.input.style.height = 'auto';
  els.input.style.height = Math.min(els.input.scrollHeight + 2, Math.max(120, window.innerHeight / 3)) + 'px';
  els.send.hidden = list.running && !els.input.value.trim();
}
els.input.addEventListener('input', fitInput);
fitInput();
for (const b of els.examples.querySelectorAll('button')) {
  b.addEventListener('click', () => {
    els.input.value = b.dataset.prompt || b.textContent;
    fitInput();
    els.input.focus();
  });
}
els.search.addEventListener('input', showSessions);
for (const b of els.confirm.querySelectorAll('button[value]')) {
  b.addEventListener('click', () => els.confirm.close(b.value));
}
els.closeSessions.addEventListener('click', () => { els.sessions.hidden = true; });
els.abort.addEventListener('click', abort);
// Esc stops the run, as in the terminal UI — unless it closes a dialog
// or the sessions panel.
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || els.confirm.open) return;
  if (!els.sessions.hidden) {
    els.sessions.hidden = true;
    return;
  }
  if (!els.abort.disabled) abort();
});
els.clear.addEventListener('click', clearSession);
els.compact.addEventListener('click', compact);
els.newSession.addEventListener('click', newSession);
els.sessionsBtn.addEventListener('click', toggleSessions);

// window.sluice lets a test (or a curious person in the console) read the
// page's state: the list it holds and the text it shows.
window.sluice = {
  state: () => list.snapshot(),
  sessionId: () => state.sessionId,
  stats: () => ({ ...state.stats }),
  connected: () => !!state.rpc && state.haveList && !state.resyncing,
  // renderedText is the text the page shows for the list.
  renderedText: () => {
    view.flush();
    return textOf(els.messages);
  },
  // freshText is the text a fresh rendering of a snapshot shows.
  freshText: (snapshot) => {
    const div = document.createElement('main');
    const v = new View(div, { onRewind: () => {} });
    v.reset(new List(snapshot));
    v.setAwaiting(snapshot.pendingPermissions || []);
    return textOf(div);
  },
  // dropConnection closes the WebSocket as a network failure would.
  dropConnection: () => state.rpc && state.rpc.close(),
};

connectLoop();
