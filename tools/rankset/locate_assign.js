#!/usr/bin/env node
// Line range of a top-level assignment statement, for CommonJS code that ../../../shared/eval/
// tools/locate.js (declarations only) cannot name: `Runner.prototype.grep = function …`,
// `exports.loadConfig = (…) => …`, `module.exports.x = …`. The symbol is the assignment's
// left-hand side as written. Leading comments are excluded, as in locate.js.
// Usage: node locate_assign.js <corpus-dir> <path> <lhs>      (TS_MODULE as for locate.js)
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require(process.env.TS_MODULE || 'typescript');

const [corpus, rel, symbol] = process.argv.slice(2);
const text = fs.readFileSync(path.join(corpus, rel), 'utf8');
const kind = /\.(js|mjs|cjs)$/.test(rel) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, kind);
const lineOf = (p) => sf.getLineAndCharacterOfPosition(p).line + 1;
const hits = [];
for (const st of sf.statements) {
  if (!ts.isExpressionStatement(st)) continue;
  let e = st.expression;
  // `a = b = function …` chains: every left-hand side names the statement.
  while (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
    if (e.left.getText(sf).replace(/\s+/g, '') === symbol) {
      hits.push({ start: lineOf(st.getStart(sf)), end: lineOf(st.end) });
      break;
    }
    e = e.right;
  }
}
if (hits.length !== 1) {
  console.error(`${hits.length} assignments to ${symbol} in ${rel}`);
  process.exit(1);
}
console.log(JSON.stringify({ path: rel, symbol, start_line: hits[0].start, end_line: hits[0].end }));
