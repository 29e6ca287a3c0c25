// Benchmark dispatcher: `npm run bench -- <name>` runs `node dist/tools/bench/run.js <name>`, which
// imports `./<name>.js`, awaits its exported `run()` and prints its figures as ONE JSON object on
// stdout (progress goes to stderr). Each module measures its own baselines in the same run.

import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** Modules beside the benchmarks that are their parts, not benchmarks (no `run()`). */
const PARTS = new Set(['run', 'open-loop', 'api-probes', 'wrk', 'recorder-yesno', 'serve', 'archive-page', 'merge-gaps']);
const available = (): string[] =>
  readdirSync(here)
    .filter((f) => f.endsWith('.js') && !PARTS.has(f.slice(0, -3)))
    .map((f) => f.slice(0, -3))
    .sort();

const name = process.argv[2];
if (!name || !/^[a-z0-9-]+$/.test(name) || !available().includes(name)) {
  process.stderr.write(`usage: npm run bench -- <name>\navailable: ${available().join(', ') || '(none)'}\n`);
  process.exit(2);
}

const mod = (await import(`./${name}.js`)) as { run?: () => Promise<Record<string, unknown>> };
if (typeof mod.run !== 'function') {
  process.stderr.write(`bench module ${name} exports no run()\n`);
  process.exit(2);
}
const started = Date.now();
const figures = await mod.run();
process.stdout.write(
  `${JSON.stringify({ bench: name, ...figures, bench_wall_s: Math.round((Date.now() - started) / 100) / 10 }, null, 2)}\n`,
);
