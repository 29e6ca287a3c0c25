// The source tree is a house of floors, drawn from its imports (type-only ones included, since a
// circle of types is still two modules that cannot be understood apart), at two scales:
// - files: no import circles (so every file stands on a floor above all it imports, and no arrow
//   between files can run back up);
// - folders (each entry of src/: a folder or a top-level file): every import between two of them runs
//   down the floors of LAYERS, never sideways or back up, so the folders cannot form a circle either.
// The test reads src/ as text, so it fails naming the circle or the arrow the moment a change makes one.
// docs/architecture.md ("Floors") explains the table.

import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SRC = join(REPO, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports and re-exports of one file, resolved to .ts paths. */
export function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  const re = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
  for (const m of text.matchAll(re)) {
    const spec = m[1] ?? m[2];
    out.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
  }
  return out;
}

/**
 * The floors of src/, lowest first: an entry may import only entries on lower floors. A new entry
 * of src/ gets its floor here (the test names any entry that has none).
 */
export const LAYERS: Readonly<Record<string, number>> = {
  // 0: contracts and leaves: record and market types, error codes, metrics, the client (its own package).
  schema: 0,
  'errors.ts': 0,
  'metrics.ts': 0,
  'tick-shape.ts': 0,
  'config-archive.ts': 0,
  'config-checks.ts': 0,
  client: 0,
  // 1: the configuration, and book state every reader and writer keeps (base classes families extend).
  'config.ts': 1,
  book: 1,
  // 2: storage, through its door.
  storage: 2,
  // 3: one folder per venue family, built on the floors below; everything above looks families up.
  families: 3,
  // 4: the write side (recorders), the read side (api), the archive mirror (pull).
  recorders: 4,
  api: 4,
  pull: 4,
  // 5: the venue emulators (they speak the recorders' wire formats).
  sim: 5,
  // 6, 7: the commands and the program.
  commands: 6,
  'cli.ts': 7,
};

/** The entry of src/ a path lies in: its first segment. */
export const entryOf = (src: string, file: string): string => relative(src, file).split('/')[0];

/** Imports between two entries that do not run down the floors, with how many of each, as `a -> b (n): file`. */
export function climbing(src: string, graph: Map<string, string[]>, layers: Readonly<Record<string, number>>): string[] {
  const found = new Map<string, { n: number; example: string }>();
  for (const [from, tos] of graph) {
    for (const to of tos) {
      const a = entryOf(src, from),
        b = entryOf(src, to);
      if (a === b || !graph.has(to)) continue;
      if (layers[a] !== undefined && layers[b] !== undefined && layers[b] < layers[a]) continue;
      const key = `${a} -> ${b}`;
      const f = found.get(key) ?? { n: 0, example: relative(src, from) + ' -> ' + relative(src, to) };
      f.n++;
      found.set(key, f);
    }
  }
  return [...found].sort().map(([k, f]) => `${k} (${f.n}), e.g. ${f.example}`);
}

/** The folder-level graph: an arrow between two entries of src/ where any file of one imports one of the other. */
export function folderGraph(src: string, graph: Map<string, string[]>): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const [from, tos] of graph) {
    const a = entryOf(src, from);
    const set = out.get(a) ?? new Set<string>();
    out.set(a, set);
    for (const to of tos) if (graph.has(to) && entryOf(src, to) !== a) set.add(entryOf(src, to));
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>(),
    low = new Map<string, number>(),
    on = new Set<string>(),
    stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      for (;;) {
        const w = stack.pop()!;
        on.delete(w);
        comp.push(w);
        if (w === v) break;
      }
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

t.test('the cycle finder finds a circle of three and ignores a chain', async (t) => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  t.same(cycles(g), [['a', 'b', 'c']]);
  t.same(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ),
    [],
  );
  t.same(importsOf('/x/y.ts', "import type { A } from './a.js';\nexport { b } from '../b.js';\nconst c = await import('./c.js');"), [
    '/x/a.ts',
    '/b.ts',
    '/x/c.ts',
  ]);
});

t.test('the floor check names an arrow that runs sideways or back up, and passes one that runs down', async (t) => {
  const g = new Map([
    ['/s/api/a.ts', ['/s/families/f.ts']],
    ['/s/families/f.ts', ['/s/api/b.ts', '/s/schema/m.ts']],
    ['/s/api/b.ts', []],
    ['/s/schema/m.ts', []],
  ]);
  t.same(climbing('/s', g, LAYERS), ['families -> api (1), e.g. families/f.ts -> api/b.ts']);
  t.same(cycles(folderGraph('/s', g)), [['api', 'families']]);
  const down = new Map([
    ['/s/api/a.ts', ['/s/families/f.ts']],
    ['/s/families/f.ts', []],
  ]);
  t.same(climbing('/s', down, LAYERS), [], 'api -> families runs down');
  const sideways = new Map([
    ['/s/pull/p.ts', ['/s/api/b.ts']],
    ['/s/api/b.ts', []],
  ]);
  t.same(
    climbing('/s', sideways, LAYERS),
    ['pull -> api (1), e.g. pull/p.ts -> api/b.ts'],
    'two entries on one floor may not import each other',
  );
});

const graph = new Map(sources(SRC).map((f) => [f, importsOf(f, readFileSync(f, 'utf8'))]));

t.test('src/ has no import circles between files', async (t) => {
  t.ok(graph.size > 50, `read ${graph.size} modules`);
  const found = cycles(graph).map((c) => c.map((f) => relative(REPO, f)).join(' ↔ '));
  t.same(found, [], found.length ? `import circles:\n${found.join('\n')}` : 'no circles');
});

t.test('every entry of src/ has a floor', async (t) => {
  const entries = [...new Set([...graph.keys()].map((f) => entryOf(SRC, f)))].sort();
  t.same(
    entries.filter((e) => LAYERS[e] === undefined),
    [],
    'entries without a floor in LAYERS',
  );
});

t.test('src/ has no import circles between folders, and no arrow that runs back up a floor', async (t) => {
  const circles = cycles(folderGraph(SRC, graph)).map((c) => c.join(' ↔ '));
  t.same(circles, [], circles.length ? `folder circles:\n${circles.join('\n')}` : 'no folder circles');
  const up = climbing(SRC, graph, LAYERS);
  t.same(up, [], up.length ? `imports that do not run down the floors:\n${up.join('\n')}` : 'every arrow runs down');
});
