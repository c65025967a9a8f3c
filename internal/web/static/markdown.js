// A small markdown parser for model output. It turns text into a tree of
// plain objects (never HTML): the page builds DOM nodes from the tree with
// createElement and text nodes only, so nothing the model writes can become
// markup, script or an attribute. Raw HTML in the text stays text.
//
// Supported: ATX headings, paragraphs (a single newline is a line break, as
// chat interfaces show it), fenced code (an unclosed fence runs to the end,
// as it does while a block streams), block quotes, bullet and ordered
// lists, thematic breaks, GFM tables; inline code, strong, emphasis,
// strikethrough, links and autolinks. Images become links: the page never
// fetches a URL the model wrote (a markdown image is the classic way to
// smuggle data out of a conversation).
//
// Tree:
//   blocks:  {t:'p', c:inlines} {t:'h', level, c} {t:'code', lang, text}
//            {t:'quote', c:blocks} {t:'list', ordered, start, items:[blocks]}
//            {t:'hr'} {t:'table', align:[...], head:[inlines], rows:[[inlines]]}
//   inlines: {t:'text', v} {t:'br'} {t:'code', v} {t:'strong'|'em'|'del', c}
//            {t:'link', href, c}
// parse() also gives each top-level block its source text (src), so that a
// renderer can keep the DOM of blocks whose source has not changed while the
// text grows.

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const TABLE_DELIM = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const BLANK = /^[ \t]*$/;

const SAFE_SCHEME = /^(https?:|mailto:)/i;

// safeHref returns href when it is an absolute http(s) or mailto URL, else
// null: no javascript:, data:, relative or protocol-relative links.
export function safeHref(href) {
  const h = href.trim();
  if (!SAFE_SCHEME.test(h)) return null;
  // Control characters and spaces have no business in a URL the model wrote.
  if (/[\u0000-\u0020\u007f]/.test(h)) return null;
  return h;
}

// parse returns the tree of text. prev, when given, is the tree of an
// earlier version of the text (a block that is still streaming): top-level
// blocks whose source is unchanged are taken from it instead of being
// parsed again, so that each frame of a streaming answer parses only what
// changed.
export function parse(text, prev) {
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  const reuse = prev ? new Map(prev.map((n) => [n.src, n])) : null;
  return parseLines(lines, true, reuse);
}

// parseLines splits lines into blocks: it first finds where a block ends,
// then builds it (unless reuse has a block of the same source).
function parseLines(lines, keepSrc, reuse) {
  const out = [];
  let i = 0;
  const push = (build, from) => {
    const src = keepSrc ? lines.slice(from, i).join('\n') : '';
    const node = (reuse && reuse.get(src)) || build();
    if (keepSrc) node.src = src;
    out.push(node);
  };
  while (i < lines.length) {
    const line = lines[i];
    const from = i;
    if (BLANK.test(line)) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2] || '';
      const body = [];
      i++;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) { i++; break; }
        body.push(lines[i]);
        i++;
      }
      push(() => ({ t: 'code', lang, text: body.join('\n') }), from);
      continue;
    }
    if ((m = HEADING.exec(line))) {
      i++;
      const level = m[1].length;
      const text = m[2] || '';
      push(() => ({ t: 'h', level, c: inline(text) }), from);
      continue;
    }
    if (HR.test(line)) {
      i++;
      push(() => ({ t: 'hr' }), from);
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) { body.push(m[1]); i++; }
      push(() => ({ t: 'quote', c: parseLines(body, false) }), from);
      continue;
    }
    if ((m = ITEM.exec(line))) {
      const build = scanList(lines, i, (end) => { i = end; });
      push(build, from);
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_DELIM.test(lines[i + 1])) {
      const head = cells(line);
      const align = cells(lines[i + 1]).map(alignOf);
      if (head.length === align.length) {
        i += 2;
        const rows = [];
        while (i < lines.length && !BLANK.test(lines[i]) && lines[i].includes('|')) {
          rows.push(cells(lines[i]));
          i++;
        }
        push(() => ({
          t: 'table', align, head: head.map((h) => inline(h)),
          rows: rows.map((r) => head.map((_, k) => inline(r[k] || ''))),
        }), from);
        continue;
      }
    }
    // A paragraph runs until a blank line or the start of another block.
    const body = [line.trim()];
    i++;
    while (i < lines.length) {
      const l = lines[i];
      if (BLANK.test(l) || FENCE.test(l) || HEADING.test(l) || HR.test(l) || QUOTE.test(l) || ITEM.test(l)) break;
      body.push(l.trim());
      i++;
    }
    push(() => ({ t: 'p', c: inline(body.join('\n')) }), from);
  }
  return out;
}

// scanList finds the extent of a list starting at lines[start] (done(end)
// reports the first line after it) and returns the function that builds
// it.
function scanList(lines, start, done) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const marker = ordered ? first[2].slice(-1) : first[2];
  const startNum = ordered ? parseInt(first[2], 10) : 1;
  const bodies = [];
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || (ordered ? !/\d/.test(m[2]) || m[2].slice(-1) !== marker : m[2] !== marker)) break;
    const indent = m[1].length + m[2].length + (m[3].length || 1);
    const body = [m[4]];
    i++;
    // The item's continuation: lines indented to its content, and blank
    // lines followed by such lines.
    while (i < lines.length) {
      const l = lines[i];
      if (BLANK.test(l)) {
        let j = i;
        while (j < lines.length && BLANK.test(lines[j])) j++;
        if (j < lines.length && leading(lines[j]) >= indent) {
          for (; i < j; i++) body.push('');
          continue;
        }
        break;
      }
      if (leading(l) >= indent) { body.push(l.slice(indent)); i++; continue; }
      // A lazy continuation of the item's paragraph.
      if (!ITEM.exec(l) && !FENCE.test(l) && !HEADING.test(l) && !HR.test(l) && !QUOTE.test(l) && !BLANK.test(body[body.length - 1])) {
        body.push(l.trim());
        i++;
        continue;
      }
      break;
    }
    bodies.push(body);
    // A blank line between items keeps the list going.
    let j = i;
    while (j < lines.length && BLANK.test(lines[j])) j++;
    if (j > i && j < lines.length && ITEM.exec(lines[j]) && leading(lines[j]) < indent) {
      const n = ITEM.exec(lines[j]);
      if (ordered ? /\d/.test(n[2]) && n[2].slice(-1) === marker : n[2] === marker) i = j;
    }
  }
  done(i);
  return () => ({ t: 'list', ordered, start: startNum, items: bodies.map((b) => parseLines(b, false)) });
}

function leading(l) {
  let n = 0;
  for (const ch of l) {
    if (ch === ' ') n++;
    else if (ch === '\t') n += 4 - (n % 4);
    else break;
  }
  return n;
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const out = [];
  let cur = '';
  for (let k = 0; k < s.length; k++) {
    if (s[k] === '\\' && s[k + 1] === '|') { cur += '|'; k++; continue; }
    if (s[k] === '|') { out.push(cur.trim()); cur = ''; continue; }
    cur += s[k];
  }
  out.push(cur.trim());
  return out;
}

function alignOf(c) {
  const l = c.startsWith(':');
  const r = c.endsWith(':');
  return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
}

const PUNCT = /[!-/:-@[-`{-~]/;

// SPAN bounds how far ahead an opening delimiter looks for its closing one,
// so that a paragraph full of unmatched '*', '[' or '`' costs linear time,
// not quadratic: a page re-parses a streaming block on every frame.
const SPAN = 4096;
// LABEL bounds a link's label.
const LABEL = 512;
const SPACE = /\s/;
const WORD = /[\p{L}\p{N}]/u;
const isSpace = (ch) => ch === undefined || SPACE.test(ch);
const isWord = (ch) => ch !== undefined && WORD.test(ch);

// inline parses the inline content of a block. Plain text is taken by
// slices of s (s[run:i] is the plain text not yet taken), not char by
// char: a long answer is re-parsed on every frame while it streams.
export function inline(s) {
  const out = [];
  let text = '';
  let run = 0;
  let i = 0;
  let close = -1; // the next ']' at or after i, as far as known (-2: none)
  const take = () => { text += s.slice(run, i); };
  const flush = () => {
    take();
    if (text) { out.push({ t: 'text', v: text }); text = ''; }
  };
  while (i < s.length) {
    const ch = s[i];
    if (ch === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1])) {
      take();
      text += s[i + 1];
      i += 2;
      run = i;
      continue;
    }
    if (ch === '\n') {
      flush();
      out.push({ t: 'br' });
      run = ++i;
      continue;
    }
    if (ch === '`') {
      let n = 0;
      while (s[i + n] === '`') n++;
      const fence = '`'.repeat(n);
      let j = s.indexOf(fence, i + n);
      while (j >= 0 && s[j + n] === '`') {
        let k = j;
        while (s[k] === '`') k++;
        j = s.indexOf(fence, k);
      }
      if (j >= 0 && j - i <= SPAN) {
        let v = s.slice(i + n, j).replace(/\n/g, ' ');
        if (v.length > 1 && v.startsWith(' ') && v.endsWith(' ') && v.trim()) v = v.slice(1, -1);
        flush();
        out.push({ t: 'code', v });
        run = i = j + n;
        continue;
      }
      i += n; // the backticks stay text
      continue;
    }
    if (ch === '*' || ch === '_' || ch === '~') {
      const span = emphasis(s, i);
      if (span) {
        flush();
        out.push(span.node);
        run = i = span.end;
        continue;
      }
    }
    if (ch === '[' || (ch === '!' && s[i + 1] === '[')) {
      // Without a ']' close enough there is no link: this keeps a run of
      // '[' linear.
      if (close !== -2 && close < i) {
        close = s.indexOf(']', i);
        if (close < 0) close = -2;
      }
      const link = close >= 0 && close - i <= LABEL ? linkAt(s, ch === '!' ? i + 1 : i) : null;
      if (link) {
        flush();
        const label = link.label === '' ? [{ t: 'text', v: link.href }] : inline(link.label);
        const href = safeHref(link.href);
        if (href) out.push({ t: 'link', href, c: label });
        else out.push(...label);
        run = i = link.end;
        continue;
      }
    }
    if (ch === '<') {
      const m = /^<((?:https?|mailto):[^\s<>]*)>/i.exec(s.slice(i, i + SPAN));
      if (m && safeHref(m[1])) {
        flush();
        out.push({ t: 'link', href: m[1], c: [{ t: 'text', v: m[1] }] });
        run = i += m[0].length;
        continue;
      }
    }
    i++;
  }
  flush();
  return out;
}

// emphasis parses **strong**, __strong__, *em*, _em_ or ~~del~~ at s[i].
function emphasis(s, i) {
  const ch = s[i];
  let n = 1;
  while (s[i + n] === ch) n++;
  if (ch === '~' && n !== 2) return null;
  const len = ch === '~' ? 2 : Math.min(n, 2);
  const delim = ch.repeat(len);
  const after = s[i + len];
  if (isSpace(after)) return null;
  // Underscores inside a word (snake_case) are not emphasis.
  if (ch === '_' && isWord(s[i - 1])) return null;
  let j = i + len;
  const limit = i + SPAN;
  // A paragraph's inline text holds no blank line, so a span never
  // crosses one; few candidates are worth trying.
  for (let tries = 0; tries < 8 && (j = s.indexOf(delim, j)) >= 0 && j <= limit; tries++) {
    const before = s[j - 1];
    const next = s[j + len];
    const closes = !isSpace(before) && j > i + len &&
      (ch !== '_' || !isWord(next)) &&
      // A single delimiter must not be half of a double one.
      (len === 2 || next !== ch || s[j + 2] === ch);
    if (closes) {
      const t = ch === '~' ? 'del' : len === 2 ? 'strong' : 'em';
      return { node: { t, c: inline(s.slice(i + len, j)) }, end: j + len };
    }
    j += len;
  }
  return null;
}

// linkAt parses [label](href "title") at s[i].
function linkAt(s, i) {
  let depth = 0;
  let j = i;
  const end = Math.min(s.length, i + LABEL);
  for (; j < end; j++) {
    if (s[j] === '\\') { j++; continue; }
    if (s[j] === '[') depth++;
    else if (s[j] === ']' && --depth === 0) break;
  }
  if (j >= end || s[j + 1] !== '(') return null;
  const m = /^\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/.exec(s.slice(j + 1));
  if (!m) return null;
  let href = m[1];
  if (href.startsWith('<')) href = href.slice(1, -1);
  return { label: s.slice(i + 1, j), href, end: j + 1 + m[0].length };
}
