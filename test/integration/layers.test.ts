import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The folders of src/ are floors (docs/architecture.md, "Modules"): an import points to the same
// floor or below, never around a circle, and a folder's index.ts exports only its own names. The
// floors are read from the doc, so the map and this test cannot drift apart.

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const DOC = path.join(ROOT, 'docs/architecture.md');
const ROW = /^\| (\d+) \| `([\w-]+)\/` \|/;

interface Floors {
  floorOf: Map<string, number>;
  /** The doc's line of each floor's last row, for a message saying where a new folder goes. */
  lastLine: Map<number, number>;
}

function readFloors(): Floors {
  const floorOf = new Map<string, number>();
  const lastLine = new Map<number, number>();
  fs.readFileSync(DOC, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      const m = ROW.exec(line);
      if (!m) return;
      floorOf.set(m[2]!, Number(m[1]));
      lastLine.set(Number(m[1]), index + 1);
    });
  return { floorOf, lastLine };
}

interface Import {
  file: string;
  line: number;
  from: string;
  to: string;
  /** An `export … from` in the folder's index.ts. */
  reexport: boolean;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

const folderOf = (file: string): string => path.relative(SRC, file).split(path.sep)[0]!;

/** Every import between folders under src/, type imports, re-exports and `import()` included. */
function readImports(): Import[] {
  const found: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const from = folderOf(file);
    const add = (specifier: ts.Node, reexport: boolean) => {
      if (!ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), specifier.text);
      const rel = path.relative(SRC, target);
      if (rel.startsWith('..') || !rel.includes(path.sep)) return;
      const to = rel.split(path.sep)[0]!;
      if (to === from) return;
      const line = source.getLineAndCharacterOfPosition(specifier.getStart()).line + 1;
      found.push({ file: path.relative(ROOT, file), line, from, to, reexport });
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, false);
      else if (ts.isExportDeclaration(node) && node.moduleSpecifier) add(node.moduleSpecifier, path.basename(file) === 'index.ts');
      else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0])
        add(node.arguments[0], false);
      else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, false);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const floors = readFloors();
const imports = readImports();
const where = (i: Import) => `${i.file}:${i.line}`;

describe('the floors of src/', () => {
  it('places every folder of src/ on a floor of docs/architecture.md', () => {
    const folders = fs
      .readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const unplaced = folders.filter((f) => !floors.floorOf.has(f));
    const advice = unplaced.map((folder) => {
      // Lowest floor it fits: above every folder it imports (its importers must then sit above it).
      const below = imports.filter((i) => i.from === folder).map((i) => floors.floorOf.get(i.to) ?? 1);
      const floor = Math.max(1, ...below);
      const after = floors.lastLine.get(floor) ?? Math.max(...floors.lastLine.values());
      return `src/${folder}/ is on no floor: add the row "| ${floor} | \`${folder}/\` | what it owns |" after line ${after} of docs/architecture.md (floor ${floor} is the highest it imports from)`;
    });
    expect(advice).toEqual([]);
  });

  it('has no import from a lower floor up to a higher one', () => {
    const upward = imports
      .filter((i) => floors.floorOf.has(i.from) && floors.floorOf.has(i.to))
      .filter((i) => floors.floorOf.get(i.to)! > floors.floorOf.get(i.from)!)
      .map(
        (i) =>
          `${where(i)}: ${i.from}/ (floor ${floors.floorOf.get(i.from)}) imports ${i.to}/ (floor ${floors.floorOf.get(i.to)}), a floor above it; move what it needs down, or pass it in from the composition root`,
      );
    expect(upward).toEqual([]);
  });

  it('has no circle of imports between folders', () => {
    const edges = new Map<string, Map<string, Import>>();
    for (const i of imports) {
      if (!edges.has(i.from)) edges.set(i.from, new Map());
      if (!edges.get(i.from)!.has(i.to)) edges.get(i.from)!.set(i.to, i);
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (folder: string) => {
      state.set(folder, 'open');
      stack.push(folder);
      for (const [to, i] of edges.get(folder) ?? []) {
        if (state.get(to) === 'open') {
          const circle = [...stack.slice(stack.indexOf(to)), to];
          cycles.push(`${circle.join(' -> ')} (closed by ${where(i)})`);
        } else if (!state.has(to)) visit(to);
      }
      stack.pop();
      state.set(folder, 'done');
    };
    for (const folder of [...edges.keys()].sort()) if (!state.has(folder)) visit(folder);
    expect(cycles).toEqual([]);
  });

  it("has no index.ts that re-exports another folder's names", () => {
    const reexports = imports
      .filter((i) => i.reexport)
      .map((i) => `${where(i)}: ${i.from}/index.ts re-exports names of ${i.to}/; import them from ${i.to}/ instead`);
    expect(reexports).toEqual([]);
  });
});

// A reader keeps a file, and a function, in mind at once: past these sizes they stop doing one
// thing. A function is measured without the bodies of the functions it defines (each measured on
// its own), so a factory that assembles small named functions (createRunEngine, a client with its
// methods) is as long as its own wiring.
const MAX_FILE_LINES = 500;
const MAX_FUNCTION_LINES = 100;
/**
 * Functions allowed past MAX_FUNCTION_LINES, by name, each with why.
 * - createApp (src/server/app.ts): the composition root, one straight list of constructions in
 *   dependency order, each a call of a module's factory; cut into pieces, the order (store →
 *   metrics → forge → outbox → engine → workspaces → workers → http) would no longer be read in
 *   one place, which is what docs/architecture.md sends a newcomer there for.
 */
const LONG_FUNCTIONS_ALLOWED = new Set(['createApp']);

interface Measured {
  where: string;
  name: string;
  lines: number;
}

function measureFunctions(): Measured[] {
  const found: Measured[] = [];
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
    const nameOf = (node: ts.FunctionLikeDeclaration): string => {
      if (node.name) return node.name.getText(source);
      const parent = node.parent;
      if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
        return parent.name.getText(source);
      return '(anonymous)';
    };
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const fn = node as ts.FunctionLikeDeclaration;
        const body = fn.body!;
        // Lines inside the bodies of functions defined in this one are theirs, not this one's.
        const nested = new Set<number>();
        const collect = (child: ts.Node) => {
          if (child !== fn && ts.isFunctionLike(child) && 'body' in child && child.body) {
            const inner = child.body as ts.Node;
            for (let l = lineOf(inner.getStart(source)) + 1; l < lineOf(inner.getEnd()); l++) nested.add(l);
            return;
          }
          ts.forEachChild(child, collect);
        };
        ts.forEachChild(body, collect);
        const first = lineOf(fn.getStart(source));
        const lines = lineOf(fn.getEnd()) - first + 1 - nested.size;
        found.push({ where: `${path.relative(ROOT, file)}:${first + 1}`, name: nameOf(fn), lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('the size of what is under src/', () => {
  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = sourceFiles(SRC)
      .map((file) => ({ file: path.relative(ROOT, file), lines: fs.readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_FILE_LINES)
      .map((f) => `${f.file} has ${f.lines} lines (at most ${MAX_FILE_LINES}): split it by concern`);
    expect(long).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines of its own, but the allowed factories`, () => {
    const measured = measureFunctions();
    const long = measured
      .filter((f) => f.lines > MAX_FUNCTION_LINES && !LONG_FUNCTIONS_ALLOWED.has(f.name))
      .map((f) => `${f.where}: ${f.name} has ${f.lines} lines of its own (at most ${MAX_FUNCTION_LINES}): make it named steps`);
    expect(long).toEqual([]);
    // An allowance nobody needs any more goes.
    const unused = [...LONG_FUNCTIONS_ALLOWED].filter((name) => !measured.some((f) => f.name === name && f.lines > MAX_FUNCTION_LINES));
    expect(unused).toEqual([]);
  });
});
