#!/usr/bin/env node
// Ground truth for the symbol-graph accuracy benchmark, from the TypeScript language
// service (nobody here wrote it): for each target symbol, its outgoing calls (call
// hierarchy) and its references (findReferences), as repository-relative positions.
//
// Usage: node ts-ground-truth.js TYPESCRIPT_MODULE CORPUS_ROOT FILES.txt TARGETS.jsonl > OUT.jsonl
//   FILES.txt      one repository-relative source path per line (the files Sextant indexed)
//   TARGETS.jsonl  {"file", "name", "line", "endLine"} per symbol (1-indexed lines)
// Output, one line per target: {"file", "name", "line", "calls": [{"file","name","line"}],
//   "refs": [{"file","line"}]}; only positions inside the corpus count; definitions and
//   references inside import/export declarations and comments are left out.
'use strict';
const fs = require('fs');
const path = require('path');

const [tsModule, root, filesList, targetsFile] = process.argv.slice(2);
if (!targetsFile) {
  console.error('usage: ts-ground-truth.js TYPESCRIPT_MODULE CORPUS_ROOT FILES.txt TARGETS.jsonl');
  process.exit(2);
}
const ts = require(tsModule);
const rootAbs = path.resolve(root);
const files = fs.readFileSync(filesList, 'utf8').split('\n').filter(Boolean)
  .map((f) => path.join(rootAbs, f));
const fileSet = new Set(files);
const texts = new Map();
const read = (f) => {
  if (!texts.has(f)) texts.set(f, fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : undefined);
  return texts.get(f);
};
const options = {
  allowJs: true, checkJs: false, noEmit: true, skipLibCheck: true,
  target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Node10, jsx: ts.JsxEmit.Preserve,
  esModuleInterop: true, experimentalDecorators: true,
};
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => '1',
  getScriptSnapshot: (f) => {
    const t = read(f);
    return t === undefined ? undefined : ts.ScriptSnapshot.fromString(t);
  },
  getCurrentDirectory: () => rootAbs,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: (f) => fs.existsSync(f),
  readFile: (f) => read(f),
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = service.getProgram();

const rel = (f) => path.relative(rootAbs, f).split(path.sep).join('/');
const inCorpus = (f) => fileSet.has(path.resolve(f));
const lineOf = (f, pos) => {
  const sf = program.getSourceFile(f);
  return sf ? sf.getLineAndCharacterOfPosition(pos).line + 1 : 0;
};

function nameOffset(file, name, line, endLine) {
  const text = read(file);
  if (text === undefined) return -1;
  const lines = text.split('\n');
  let offset = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
  const re = new RegExp('(^|[^A-Za-z0-9_$#])' + name.replace(/[$]/g, '\\$') + '(?![A-Za-z0-9_$])');
  for (let i = line - 1; i < Math.min(endLine, lines.length); i++) {
    const m = re.exec(lines[i]);
    if (m) return offset + m.index + m[1].length;
    offset += lines[i].length + 1;
  }
  return -1;
}

// References in import/export declarations, and in comments (JSDoc `@link`, `@see`), which
// Sextant does not count as uses.
function notAUse(file, pos) {
  const sf = program.getSourceFile(file);
  if (!sf) return false;
  let node = ts.getTokenAtPosition(sf, pos);
  if (node.getStart(sf) > pos) return true;
  while (node) {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node) ||
        ts.isImportEqualsDeclaration(node) || ts.isExportAssignment(node)) return true;
    node = node.parent;
  }
  return false;
}

// The implementation's name position when `pos` names an overload signature.
function implementationOffset(file, pos) {
  const sf = program.getSourceFile(file);
  if (!sf) return pos;
  const token = ts.getTokenAtPosition(sf, pos);
  const symbol = program.getTypeChecker().getSymbolAtLocation(token);
  const decls = (symbol && symbol.declarations) || [];
  const impl = decls.find((d) => d.body && d.getSourceFile() === sf && d.name);
  return impl ? impl.name.getStart(sf) : pos;
}

const targets = fs.readFileSync(targetsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
for (const t of targets) {
  const file = path.join(rootAbs, t.file);
  const named = nameOffset(file, t.name, t.line, t.endLine);
  const pos = named >= 0 ? implementationOffset(file, named) : named;
  const out = { file: t.file, name: t.name, line: t.line, calls: [], refs: [], found: pos >= 0 };
  if (pos >= 0) {
    let items = [];
    try { items = service.prepareCallHierarchy(file, pos) || []; } catch (e) { items = []; }
    if (!Array.isArray(items)) items = [items];
    for (const item of items) {
      let outgoing = [];
      try { outgoing = service.provideCallHierarchyOutgoingCalls(file, item.selectionSpan.start) || []; } catch (e) { outgoing = []; }
      for (const call of outgoing) {
        if (!inCorpus(call.to.file)) continue;
        out.calls.push({ file: rel(call.to.file), name: call.to.name,
          line: lineOf(call.to.file, call.to.selectionSpan.start) });
      }
    }
    let refs = [];
    try { refs = service.findReferences(file, pos) || []; } catch (e) { refs = []; }
    // The symbol's own group and those of its import aliases; findReferences also returns
    // the groups of related symbols (methods it overrides or implements, their overrides).
    const own = refs.filter((g) => g.definition.kind === 'alias' || (g.definition.fileName === file &&
      g.definition.textSpan.start <= named && named <= g.definition.textSpan.start + g.definition.textSpan.length));
    for (const symbol of own) {
      for (const r of symbol.references) {
        if (r.isDefinition || !inCorpus(r.fileName)) continue;
        if (notAUse(r.fileName, r.textSpan.start)) continue;
        out.refs.push({ file: rel(r.fileName), line: lineOf(r.fileName, r.textSpan.start) });
      }
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
