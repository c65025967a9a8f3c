// The highlighter: highlight.js's token tree as the view builds spans from
// it — classes as highlight.js names them, and the code's text unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { languageOf, tokens } from '../static/highlight.js';

const textOf = (nodes) => nodes.map((n) => (typeof n === 'string' ? n : textOf(n.children))).join('');
const classes = (nodes, out = []) => {
  for (const n of nodes) if (typeof n !== 'string') { out.push(n.cls); classes(n.children, out); }
  return out;
};

test('languages from fence info strings', () => {
  for (const [info, want] of [['go', 'go'], ['Python extra', 'python'], ['sh', 'sh'], ['', ''], ['no-such-lang', ''], [undefined, '']]) {
    assert.equal(languageOf(info), want, String(info));
  }
});

test('tokens keep the text and carry highlight.js classes', () => {
  const cases = [
    ['go', 'package main\n\nfunc main() {\n\tfmt.Println("<b>hi</b>") // say it\n}', ['hljs-keyword', 'hljs-string', 'hljs-comment']],
    ['python', 'def f(x):\n    return x + 1  # one more', ['hljs-keyword', 'hljs-title function_', 'hljs-number', 'hljs-comment']],
    ['html', '<script>alert(1)</script>', ['hljs-tag', 'language-javascript']],
  ];
  for (const [lang, code, want] of cases) {
    const tree = tokens(code, languageOf(lang));
    assert.ok(tree, lang);
    assert.equal(textOf(tree), code, lang);
    const got = classes(tree);
    for (const c of want) assert.ok(got.includes(c), `${lang}: ${c} not in ${got}`);
  }
});

test('no tree for an unknown language or a huge block', () => {
  assert.equal(tokens('x := 1', ''), null);
  assert.equal(tokens('x'.repeat(100_001), 'go'), null);
});
