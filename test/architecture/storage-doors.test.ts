// The storage layer's doors and its floors (docs/architecture.md, "Storage inside"):
// - product code outside src/storage imports only src/storage/index.ts;
// - tools/ and the tests outside test/storage import only index.ts or testing.ts (the tests' and
//   benchmarks' entry); test/storage, the unit tests of storage's rooms, may open any of them;
// - tools/ never imports test/;
// - inside src/storage the sub-folders stand in one order, each importing only those below it.
// The test reads the files as text and names every import that breaks a rule.

import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const storage = join(root, 'src', 'storage');
const doors = { product: join(storage, 'index.ts'), testing: join(storage, 'testing.ts') };

/**
 * Storage's floors, from the ground up. `base` is the loose files every floor may use; a floor
 * imports only files of its own floor and of those below. index.ts, testing.ts and verify.ts stand
 * on top of all of them.
 */
export const FLOORS = ['base', 'parquet', 'log', 'read', 'candles', 'tardis', 'archive', 'compaction', 'merge'] as const;
const BASE = new Set(['types.ts', 'paths.ts', 'durable.ts', 'disk-space.ts']);
const TOP = new Set(['index.ts', 'testing.ts', 'verify.ts']);

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Every module specifier of `code`: static imports and re-exports, and dynamic import() calls. */
export function specifiers(code: string): string[] {
  const out: string[] = [];
  for (const m of code.matchAll(/(?:^|[\s;])(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]/g)) out.push(m[1]);
  for (const m of code.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]);
  for (const m of code.matchAll(/(?:^|[\s;])import\s*['"]([^'"]+)['"]/g)) out.push(m[1]);
  return out;
}

/** The files `file` imports by relative path, as .ts paths. */
function targets(file: string, code: string): string[] {
  return specifiers(code)
    .filter((s) => s.startsWith('.'))
    .map((s) => resolve(dirname(file), s).replace(/\.js$/, '.ts'));
}

/** A storage file's floor: its sub-folder, `base`, `top`, or null for a sub-folder the order does not name. */
export function floorOf(file: string): string | null {
  const parts = relative(storage, file).split(sep);
  if (parts.length === 1) return BASE.has(parts[0]) ? 'base' : TOP.has(parts[0]) ? 'top' : null;
  return (FLOORS as readonly string[]).includes(parts[0]) ? parts[0] : null;
}

/** The imports among storage's files that climb a floor (or touch a floor the order does not name). */
export function climbs(files: ReadonlyMap<string, string>): string[] {
  const found: string[] = [];
  for (const [file, code] of files) {
    const from = floorOf(file);
    if (from === 'top') continue;
    if (from === null) {
      found.push(`${relative(root, file)} stands on no floor: add its folder to FLOORS and docs/architecture.md`);
      continue;
    }
    for (const target of targets(file, code)) {
      if (!target.startsWith(storage + sep)) continue;
      const to = floorOf(target);
      const ok =
        to !== null && to !== 'top' && FLOORS.indexOf(to as (typeof FLOORS)[number]) <= FLOORS.indexOf(from as (typeof FLOORS)[number]);
      if (!ok) found.push(`${relative(root, file)} (${from}) imports ${relative(root, target)} (${to ?? 'no floor'})`);
    }
  }
  return found;
}

/** Imports of a storage file other than `allowed` by the files under `dirs` (minus `except`). */
function throughDoors(dirs: string[], allowed: string[], except: string[] = []): string[] {
  const found: string[] = [];
  for (const file of dirs.flatMap((d) => sourceFiles(join(root, d)))) {
    if (file.startsWith(storage + sep) || except.some((e) => file.startsWith(join(root, e) + sep))) continue;
    for (const target of targets(file, readFileSync(file, 'utf8'))) {
      if (target.startsWith(storage + sep) && !allowed.includes(target))
        found.push(`${relative(root, file)} imports ${relative(root, target)}`);
    }
  }
  return found;
}

const read = (files: string[]): Map<string, string> => new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));

t.test('the scanner sees every form of import', async (t) => {
  const code = [
    "import { a } from '../storage/log/frame.js';",
    "import type { B } from '../storage/types.js';",
    "export { c } from '../storage/index.js';",
    "const m = await import('../storage/parquet/compaction.js');",
    "import '../storage/read/scan.js';",
  ].join('\n');
  t.same(specifiers(code), [
    '../storage/log/frame.js',
    '../storage/types.js',
    '../storage/index.js',
    '../storage/parquet/compaction.js',
    '../storage/read/scan.js',
  ]);
});

t.test('the floor check names an import that climbs, and passes one that goes down', async (t) => {
  const at = (p: string): string => join(storage, p);
  t.same(climbs(new Map([[at('log/recovery.ts'), "import { scanFrames } from '../read/scan.js';"]])), [
    'src/storage/log/recovery.ts (log) imports src/storage/read/scan.ts (read)',
  ]);
  t.same(climbs(new Map([[at('paths.ts'), "import { x } from './log/frame.js';"]])), [
    'src/storage/paths.ts (base) imports src/storage/log/frame.ts (log)',
  ]);
  t.same(climbs(new Map([[at('read/view.ts'), "import { x } from '../index.js';"]])), [
    'src/storage/read/view.ts (read) imports src/storage/index.ts (top)',
  ]);
  t.same(climbs(new Map([[at('cache/lru.ts'), '']])), [
    'src/storage/cache/lru.ts stands on no floor: add its folder to FLOORS and docs/architecture.md',
  ]);
  t.same(
    climbs(
      new Map([
        [
          at('read/reader.ts'),
          "import { a } from '../log/frame.js';\nimport { b } from '../parquet/reader.js';\nimport { c } from '../paths.js';",
        ],
      ]),
    ),
    [],
  );
});

t.test('product code outside src/storage imports only storage/index.ts', async (t) => {
  const found = throughDoors(['src'], [doors.product]);
  t.same(found, [], `imports through the product's door only:\n${found.join('\n')}`);
});

t.test('tools/ and the tests outside test/storage import only storage/index.ts or storage/testing.ts', async (t) => {
  const found = throughDoors(['tools', 'test'], [doors.product, doors.testing], ['test/storage']);
  t.same(found, [], `imports through the two doors only:\n${found.join('\n')}`);
});

t.test('tools/ never imports test/', async (t) => {
  const tests = join(root, 'test') + sep;
  const found = sourceFiles(join(root, 'tools')).flatMap((f) =>
    targets(f, readFileSync(f, 'utf8'))
      .filter((x) => x.startsWith(tests))
      .map((x) => `${relative(root, f)} imports ${relative(root, x)}`),
  );
  t.same(found, [], `a benchmark's fixtures live under tools/:\n${found.join('\n')}`);
});

t.test('inside src/storage no import climbs a floor', async (t) => {
  const files = sourceFiles(storage);
  t.ok(files.length > 50, `read ${files.length} storage modules`);
  const found = climbs(read(files));
  t.same(found, [], `floors, from the ground up: ${FLOORS.join(' < ')}\n${found.join('\n')}`);
});
