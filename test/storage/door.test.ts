// src/storage/index.ts is the storage layer's only door: no module outside src/storage imports
// another file of it. The test reads every source file under src/ and names each violation.

import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const src = join(root, 'src');
const storage = join(src, 'storage');
const door = join(storage, 'index.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
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

/** Files outside src/storage and the storage files each imports other than the door. */
function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(src)) {
    if (file.startsWith(storage + sep)) continue;
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      if (target.startsWith(storage + sep) && target !== door) found.push(`${relative(root, file)} imports ${spec}`);
    }
  }
  return found;
}

t.test('the scanner sees every form of import', async (t) => {
  const code = [
    "import { a } from '../storage/log/frame.js';",
    "import type { B } from '../storage/types.js';",
    "export { c } from '../storage/index.js';",
    "const m = await import('../storage/parquet/compaction.js');",
    "import '../storage/read/scan.js';",
  ].join('\n');
  t.same(specifiers(code), ['../storage/log/frame.js', '../storage/types.js', '../storage/index.js', '../storage/parquet/compaction.js', '../storage/read/scan.js']);
});

t.test('nothing outside src/storage imports storage internals (only storage/index.js)', async (t) => {
  const all = violations();
  t.same(all, [], `imports through the door only:\n${all.join('\n')}`);
});
