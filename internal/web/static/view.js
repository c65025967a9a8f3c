// The view: DOM for a session's message list, updated in place.
//
// Safety: every piece of text from the session (model output, tool output,
// user input) reaches the DOM through text nodes (el.textContent /
// document.createTextNode) or the markdown tree, whose node types map to a
// fixed set of elements below. No HTML string is ever parsed, so model
// output cannot inject markup, script or attributes.
//
// Cost: the reducer's change tells which block a delta touched; the block
// is marked dirty and re-rendered once per animation frame, however many
// deltas arrived in it. A text block re-parses its markdown but keeps the
// DOM of every top-level markdown block whose source did not change, so a
// streaming answer rebuilds only its last paragraph.

import { parse } from './markdown.js';
import { languageOf, tokens } from './highlight.js';

const h = (tag, cls, text) => {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
};

// durationText renders a reasoning block's header: live while it streams,
// frozen at its end, nothing when the times are missing or inverted.
export function reasoningHeader(b, now) {
  if (b.stage === 'end') {
    if (b.startedAt > 0 && b.endedAt && b.endedAt >= b.startedAt) {
      // Rounded as the terminal UI rounds (internal/tui thinkingHeader).
      const secs = Math.floor((b.endedAt - b.startedAt + 500) / 1000);
      return secs > 0 ? `Thought for ${secs}s` : 'Thought for <1s';
    }
    return 'Thought';
  }
  if (b.startedAt && now >= b.startedAt) return `Thinking ${Math.floor((now - b.startedAt) / 1000)}s`;
  return 'Thinking';
}

// toolSummary is what a tool's header shows after its name: the compact
// parameters (the block's, or those of its permission request, asked),
// or while they stream the last 30 characters of the raw parameters with
// newlines shown as \n.
export function toolSummary(b, asked) {
  if (b.compactParams) return b.compactParams;
  if (asked) return asked;
  const p = (b.parameters || '').replace(/\n/g, '\\n');
  return p.length > 30 ? '…' + p.slice(-30) : p;
}

// toolStatus is a tool block's state: preparing (its parameters stream),
// waiting (for the user's approval: awaiting holds its toolId), running,
// done or failed.
export function toolStatus(b, awaiting) {
  if (b.stage === 'end') return b.success === true ? 'done' : 'failed';
  if (awaiting && awaiting.has(b.toolId)) return 'waiting';
  if (b.stage === 'running') return 'running';
  return 'preparing';
}

// TOOL_STATUS_TEXT is what a tool block's header says of each state.
export const TOOL_STATUS_TEXT = {
  preparing: 'preparing…',
  waiting: 'waiting for approval',
  running: 'running…',
  done: 'done',
  failed: 'failed',
};

// copyText puts text on the clipboard: the Clipboard API where the page
// may use it, else a selected textarea and the copy command.
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    // Not allowed (no focus, no permission): the old way.
  }
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.className = 'offscreen';
  document.body.append(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

// copyButton returns a button that copies what text() returns and says so
// for a moment.
export function copyButton(label, text) {
  const b = h('button', 'copy', label);
  b.type = 'button';
  b.dataset.chrome = '';
  b.addEventListener('click', async () => {
    try {
      await copyText(text());
      b.textContent = 'Copied';
    } catch {
      b.textContent = 'Copy failed';
    }
    setTimeout(() => { b.textContent = label; }, 1500);
  });
  return b;
}

// codeBlock is a fenced code block: its language and a copy button above
// the code, highlighted when the language is known.
function codeBlock(n) {
  const wrap = h('div', 'codeblock');
  const head = h('div', 'code-head');
  head.dataset.chrome = '';
  head.append(h('span', 'code-lang', (n.lang || '').trim().split(/\s+/)[0] || 'text'), copyButton('Copy', () => n.text));
  const pre = h('pre', 'code');
  const code = h('code', 'hljs');
  const lang = languageOf(n.lang);
  const tree = tokens(n.text, lang);
  if (tree) {
    code.classList.add('language-' + lang);
    appendTokens(code, tree);
  } else {
    code.textContent = n.text;
  }
  if (n.lang) pre.dataset.lang = n.lang;
  pre.append(code);
  wrap.append(head, pre);
  return wrap;
}

function appendTokens(parent, nodes) {
  for (const t of nodes) {
    if (typeof t === 'string') parent.append(document.createTextNode(t));
    else parent.append(appendTokens(h('span', t.cls || undefined), t.children));
  }
  return parent;
}

// textOfMessage is what an answer's copy button copies: its text blocks,
// as markdown.
export function textOfMessage(msg) {
  return msg.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('\n\n').trim();
}

// buildMarkdown returns the DOM of one markdown block node.
function buildBlock(n) {
  switch (n.t) {
    case 'p': return inlines(h('p'), n.c);
    case 'h': return inlines(h('h' + Math.min(6, Math.max(1, n.level | 0))), n.c);
    case 'code': return codeBlock(n);
    case 'quote': {
      const q = h('blockquote');
      for (const c of n.c) q.append(buildBlock(c));
      return q;
    }
    case 'list': {
      const l = h(n.ordered ? 'ol' : 'ul');
      if (n.ordered && n.start !== 1) l.start = n.start;
      for (const it of n.items) {
        const li = h('li');
        // A one-paragraph item shows without the paragraph's margins.
        if (it.length === 1 && it[0].t === 'p') inlines(li, it[0].c);
        else for (const c of it) li.append(buildBlock(c));
        l.append(li);
      }
      return l;
    }
    case 'hr': return h('hr');
    case 'table': {
      const t = h('table');
      const tr = h('tr');
      n.head.forEach((c, k) => tr.append(cell('th', c, n.align[k])));
      t.append(h('thead'));
      t.firstChild.append(tr);
      const body = h('tbody');
      for (const r of n.rows) {
        const row = h('tr');
        r.forEach((c, k) => row.append(cell('td', c, n.align[k])));
        body.append(row);
      }
      t.append(body);
      return t;
    }
  }
  return h('p', undefined, '');
}

function cell(tag, c, align) {
  const el = inlines(h(tag), c);
  if (align) el.className = 'align-' + align;
  return el;
}

function inlines(parent, nodes) {
  for (const n of nodes) {
    switch (n.t) {
      case 'text': parent.append(document.createTextNode(n.v)); break;
      case 'br': parent.append(h('br')); break;
      case 'code': parent.append(h('code', undefined, n.v)); break;
      case 'strong': case 'em': case 'del': parent.append(inlines(h(n.t), n.c)); break;
      case 'link': {
        const a = inlines(h('a'), n.c);
        // parse() only produces http(s) and mailto links.
        a.href = n.href;
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        parent.append(a);
        break;
      }
    }
  }
  return parent;
}

// renderMarkdown makes el show text as markdown, keeping the parse and the
// DOM of the top-level blocks whose source is unchanged.
export function renderMarkdown(el, text) {
  const nodes = parse(text, el.__md);
  el.__md = nodes;
  const kids = el.children;
  let k = 0;
  for (; k < nodes.length; k++) {
    const old = kids[k];
    if (old && old.__src === nodes[k].src) continue;
    const fresh = buildBlock(nodes[k]);
    fresh.__src = nodes[k].src;
    if (old) old.replaceWith(fresh); else el.append(fresh);
  }
  while (kids.length > nodes.length) kids[kids.length - 1].remove();
}

// View renders a List into a container.
export class View {
  constructor(container, { onRewind } = {}) {
    this.container = container;
    this.onRewind = onRewind;
    // awaiting holds the toolIds of the calls waiting for the user's
    // approval, with the compact parameters their requests carry
    // (setAwaiting); tools maps a toolId to its block's view.
    this.awaiting = new Map();
    this.tools = new Map();
    this.msgs = []; // parallel to list.messages: {msg, el, blocksEl, blocks: [{el, type}]}
    this.dirty = new Set(); // message views with dirty blocks
    this.frame = 0;
    this.clock = 0;
    this.liveClocks = new Set(); // reasoning block views still streaming
    // follow: the container shows its end, and keeps showing it as content
    // grows, until the reader scrolls up (and again once they scroll back
    // down to the end).
    this.follow = true;
    this.autoTop = -1; // where stick last scrolled to: its own scroll events are not the reader's
    container.addEventListener('scroll', () => {
      if (container.scrollTop !== this.autoTop) this.follow = this.atEnd();
    });
  }

  // setAwaiting marks the tool calls waiting for approval (the list's
  // pendingPermissions) and unmarks the others. A call waiting shows the
  // compact parameters of its request while its block has none yet.
  setAwaiting(requests) {
    const changed = new Set([...this.awaiting.keys(), ...requests.map((p) => p.toolId)]);
    this.awaiting = new Map(requests.map((p) => [p.toolId, p.compactParams || '']));
    for (const id of changed) {
      const bv = this.tools.get(id);
      if (bv) this.updateToolStatus(bv);
    }
  }

  updateToolStatus(bv) {
    const st = toolStatus(bv.block, this.awaiting);
    bv.params.textContent = toolSummary(bv.block, this.awaiting.get(bv.block.toolId));
    bv.status.textContent = TOOL_STATUS_TEXT[st];
    bv.status.dataset.status = st;
    bv.el.dataset.status = st;
  }

  atEnd() {
    const c = this.container;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 48;
  }

  // stick scrolls to the end when following.
  stick() {
    if (!this.follow) return;
    this.container.scrollTop = this.container.scrollHeight;
    this.autoTop = this.container.scrollTop;
  }

  // reset rebuilds everything from the list, showing its end: a session
  // opens at its last message.
  reset(list) {
    this.dirty.clear();
    this.msgs = [];
    this.tools.clear();
    this.container.replaceChildren();
    this.follow = true;
    this.append(list, 0);
  }

  // apply renders a change reported by List.apply.
  apply(list, change) {
    switch (change.kind) {
      case 'append':
        this.append(list, change.index);
        break;
      case 'block': {
        const mv = this.msgs[change.index];
        mv.dirtyBlocks.add(change.block);
        this.dirty.add(mv);
        this.schedule();
        break;
      }
      case 'message':
        this.renderFooter(this.msgs[change.index]);
        this.stick();
        break;
      case 'remove': {
        const [mv] = this.msgs.splice(change.index, 1);
        this.dirty.delete(mv);
        mv.el.remove();
        break;
      }
      case 'truncate':
        for (const mv of this.msgs.splice(change.index)) {
          this.dirty.delete(mv);
          mv.el.remove();
        }
        break;
    }
  }

  append(list, from) {
    for (let i = from; i < list.messages.length; i++) {
      // A new message from the user is where the reader's attention is:
      // show it and what answers it.
      if (list.messages[i].role === 'user') this.follow = true;
      const mv = this.buildMessage(list.messages[i]);
      this.msgs.push(mv);
      this.container.append(mv.el);
    }
    this.tickClocks();
    this.stick();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => this.flush());
  }

  // flush renders every dirty block now.
  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const mv of this.dirty) {
      for (const b of mv.dirtyBlocks) this.renderBlock(mv, b);
      mv.dirtyBlocks.clear();
    }
    this.dirty.clear();
    this.tickClocks();
    this.stick();
  }

  // buildMessage makes the view of a message; nested is set for a
  // subagent's message (shown under its call, never rewound to).
  buildMessage(msg, nested) {
    const el = h('article', 'msg ' + (msg.role === 'user' ? 'user' : 'assistant'));
    el.dataset.id = msg.id;
    const blocksEl = h('div', 'blocks');
    el.append(blocksEl);
    const mv = { msg, el, blocksEl, blocks: [], dirtyBlocks: new Set(), footer: null, actions: null };
    if (msg.role === 'user' && this.onRewind && !nested) {
      const b = h('button', 'rewind', '↺ Rewind');
      b.type = 'button';
      b.dataset.chrome = '';
      b.title = 'Rewind the session to before this message';
      b.addEventListener('click', () => this.onRewind(mv.msg));
      el.prepend(b);
    }
    if (msg.role === 'assistant' && !nested) {
      mv.actions = h('div', 'msg-actions');
      mv.actions.dataset.chrome = '';
      const copy = copyButton('Copy', () => textOfMessage(mv.msg));
      copy.classList.add('copy-answer');
      copy.title = 'Copy this answer as markdown';
      mv.actions.append(copy);
      el.append(mv.actions);
    }
    for (let b = 0; b < msg.blocks.length; b++) this.renderBlock(mv, b);
    this.renderFooter(mv);
    return mv;
  }

  // renderActions shows an answer's copy button once it has text; a turn
  // that ended in tool calls is a remark on the way, not an answer.
  renderActions(mv) {
    if (!mv.actions) return;
    mv.actions.hidden = mv.msg.stopReason === 'tool_use' || !mv.msg.blocks.some((b) => b.type === 'text' && b.content.trim());
  }

  renderFooter(mv) {
    this.renderActions(mv);
    const m = mv.msg;
    let text = '';
    if (m.stopReason && m.stopReason !== 'end_turn' && m.stopReason !== 'tool_use') text = `stopped: ${m.stopReason}`;
    if (!text) {
      if (mv.footer) { mv.footer.remove(); mv.footer = null; }
      return;
    }
    if (!mv.footer) {
      mv.footer = h('footer', 'stop');
      mv.el.insertBefore(mv.footer, mv.actions);
    }
    mv.footer.textContent = text;
  }

  // renderBlock brings block b of a message view up to date, creating its
  // element when new or when its type changed (an error block replacing
  // another).
  renderBlock(mv, b) {
    const blk = mv.msg.blocks[b];
    if (!blk) return;
    let bv = mv.blocks[b];
    if (!bv || bv.type !== blk.type) {
      const fresh = this.buildBlockView(blk, mv.msg.role);
      if (bv) bv.el.replaceWith(fresh.el);
      else {
        // Blocks are created in index order; fill any hole defensively.
        for (let k = mv.blocks.length; k < b; k++) this.renderBlock(mv, k);
        mv.blocksEl.append(fresh.el);
      }
      mv.blocks[b] = bv = fresh;
    }
    this.updateBlockView(bv, blk, mv.msg.role);
    if (blk.type === 'text') this.renderActions(mv);
  }

  buildBlockView(blk, role) {
    const el = h('section', 'block ' + blk.type);
    const bv = { type: blk.type, el };
    switch (blk.type) {
      case 'reasoning': {
        const d = h('details');
        bv.head = h('summary', 'clock');
        bv.head.dataset.clock = '';
        bv.body = h('div', 'md');
        d.append(bv.head, bv.body);
        el.append(d);
        break;
      }
      case 'tool': {
        const head = h('div', 'tool-head');
        bv.name = h('span', 'tool-name');
        bv.params = h('span', 'tool-params');
        bv.status = h('span', 'tool-stage');
        head.append(bv.name, bv.params, bv.status);
        bv.short = h('pre', 'tool-short');
        bv.error = h('div', 'tool-error');
        bv.full = h('details', 'tool-result');
        bv.full.append(h('summary', undefined, 'output'));
        bv.fullPre = h('pre');
        bv.full.append(bv.fullPre);
        // A subagent's messages, nested under its call.
        bv.kidsEl = h('div', 'subagent');
        bv.kidsEl.hidden = true;
        bv.kids = [];
        el.append(head, bv.kidsEl, bv.short, bv.error, bv.full);
        break;
      }
      case 'compact': {
        el.append(h('div', 'compact-head', 'Conversation compacted'));
        bv.body = h('div', 'md');
        el.append(bv.body);
        break;
      }
      case 'error':
        bv.body = h('div', 'error-text');
        el.append(bv.body);
        break;
      default:
        bv.body = h('div', role === 'user' ? 'plain' : 'md');
        el.append(bv.body);
    }
    return bv;
  }

  updateBlockView(bv, blk, role) {
    if (blk.stage) bv.el.dataset.stage = blk.stage; else delete bv.el.dataset.stage;
    switch (blk.type) {
      case 'reasoning':
        bv.block = blk;
        bv.head.textContent = reasoningHeader(blk, Date.now());
        if (blk.stage !== 'end') this.liveClocks.add(bv);
        renderMarkdown(bv.body, blk.content);
        break;
      case 'tool':
        bv.block = blk;
        if (blk.toolId) this.tools.set(blk.toolId, bv);
        bv.name.textContent = blk.name || 'tool';
        this.updateToolStatus(bv);
        bv.short.textContent = blk.shortResult || '';
        bv.short.hidden = !blk.shortResult;
        bv.error.textContent = blk.error || '';
        bv.error.hidden = !blk.error;
        if (bv.fullPre.textContent !== (blk.result || '')) bv.fullPre.textContent = blk.result || '';
        bv.full.hidden = !blk.result || blk.result.trim() === (blk.shortResult || '').trim();
        this.renderKids(bv, blk.messages || []);
        break;
      case 'compact':
        renderMarkdown(bv.body, blk.content);
        break;
      case 'error':
        bv.body.textContent = blk.content;
        break;
      default:
        if (role === 'user') bv.body.textContent = blk.content;
        else renderMarkdown(bv.body, blk.content);
    }
  }

  // renderKids brings a tool block's nested subagent messages up to date.
  // The reducer changes them in place, so a view is kept while its message
  // is the same object; only the last two can still be changing (the one
  // streaming, and the one whose tool calls run), so only those re-render.
  renderKids(bv, msgs) {
    let keep = 0;
    while (keep < bv.kids.length && keep < msgs.length && bv.kids[keep].msg === msgs[keep]) keep++;
    for (const mv of bv.kids.splice(keep)) mv.el.remove();
    for (let i = 0; i < msgs.length; i++) {
      if (i >= keep) {
        const mv = this.buildMessage(msgs[i], true);
        bv.kids.push(mv);
        bv.kidsEl.append(mv.el);
      } else if (i >= msgs.length - 2) {
        const mv = bv.kids[i];
        for (let b = 0; b < mv.msg.blocks.length; b++) this.renderBlock(mv, b);
        this.renderFooter(mv);
      }
    }
    bv.kidsEl.hidden = msgs.length === 0;
  }

  // tickClocks refreshes the live "Thinking Ns" headers, once a second
  // while any reasoning block streams.
  tickClocks() {
    const now = Date.now();
    for (const bv of this.liveClocks) {
      if (!bv.el.isConnected || bv.block.stage === 'end') this.liveClocks.delete(bv);
      else bv.head.textContent = reasoningHeader(bv.block, now);
    }
    if (this.liveClocks.size && !this.clock) {
      this.clock = setInterval(() => this.tickClocks(), 1000);
    } else if (!this.liveClocks.size && this.clock) {
      clearInterval(this.clock);
      this.clock = 0;
    }
  }
}

// textOf returns the text a subtree shows, leaving out live clocks (whose
// text depends on when it was last drawn) and the controls (buttons and
// labels, data-chrome): what tests compare between the live page and a
// fresh rendering of a snapshot.
export function textOf(root) {
  let out = '';
  const walk = (n) => {
    if (n.nodeType === Node.TEXT_NODE) { out += n.nodeValue; return; }
    if (n.nodeType !== Node.ELEMENT_NODE) return;
    if (n.dataset && ('clock' in n.dataset || 'chrome' in n.dataset)) return;
    if (n.hidden) return;
    if (n.tagName === 'BR') out += '\n';
    for (const c of n.childNodes) walk(c);
    if (n.tagName === 'P' || n.tagName === 'LI' || n.tagName === 'PRE' || n.tagName === 'SECTION') out += '\n';
  };
  walk(root);
  return out;
}
