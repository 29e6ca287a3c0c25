// The source tree has no import circles: every module's imports (type-only ones included, since a
// circle of types is still two modules that cannot be understood apart) form a graph without cycles.
// The test reads src/ as text, so it fails naming the circle the moment a change closes one.

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

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>(), low = new Map<string, number>(), on = new Set<string>(), stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++; stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      for (;;) { const w = stack.pop()!; on.delete(w); comp.push(w); if (w === v) break; }
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

t.test('the cycle finder finds a circle of three and ignores a chain', async (t) => {
  const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
  t.same(cycles(g), [['a', 'b', 'c']]);
  t.same(cycles(new Map([['a', ['b']], ['b', []]])), []);
  t.same(importsOf('/x/y.ts', "import type { A } from './a.js';\nexport { b } from '../b.js';\nconst c = await import('./c.js');"),
    ['/x/a.ts', '/b.ts', '/x/c.ts']);
});

t.test('src/ has no import circles', async (t) => {
  const files = sources(SRC);
  t.ok(files.length > 50, `read ${files.length} modules`);
  const graph = new Map(files.map((f) => [f, importsOf(f, readFileSync(f, 'utf8'))]));
  const found = cycles(graph).map((c) => c.map((f) => relative(REPO, f)).join(' ↔ '));
  t.same(found, [], found.length ? `import circles:\n${found.join('\n')}` : 'no circles');
});
