// Syntax highlighting of code blocks with highlight.js (vendor/, pinned;
// see vendor/README.md). highlight.js renders HTML strings, and the page
// never parses HTML: its parser also keeps the token tree it rendered
// (result._emitter.rootNode in the pinned version), which tokens() hands
// on and the view turns into spans, the code's text as text nodes.

import hljs from './vendor/highlight.min.js';

// MAX_CODE bounds the code highlighted: a longer block shows plain, since
// a streaming block is highlighted again on every frame that changes it.
const MAX_CODE = 100_000;

// languageOf returns the highlight.js language a fence's info string names
// ("go", "sh", "python extra"), or "" when it names none it knows.
export function languageOf(info) {
  const name = String(info || '').trim().split(/\s+/)[0].toLowerCase();
  return name && hljs.getLanguage(name) ? name : '';
}

// className is highlight.js's class for a scope: "keyword" is
// "hljs-keyword", "title.function" is "hljs-title function_".
function className(scope) {
  if (scope.startsWith('language:')) return 'language-' + scope.slice('language:'.length);
  const [head, ...rest] = scope.split('.');
  return ['hljs-' + head, ...rest.map((x, i) => x + '_'.repeat(i + 1))].join(' ');
}

function convert(node) {
  if (typeof node === 'string') return node;
  const children = (node.children || []).map(convert);
  return node.scope ? { cls: className(node.scope), children } : { cls: '', children };
}

// tokens returns the highlighted code as a tree — a string is text, an
// object {cls, children} a span — or null when lang is unknown, the code
// too long, or highlighting fails.
export function tokens(code, lang) {
  if (!lang || code.length > MAX_CODE) return null;
  try {
    const res = hljs.highlight(code, { language: lang, ignoreIllegals: true });
    const root = res._emitter && res._emitter.rootNode;
    return root ? convert(root).children : null;
  } catch {
    return null;
  }
}
