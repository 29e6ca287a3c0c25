// Child process of the merge crash test: merges one day of a shared archive (credentials from the
// environment), printing each phase; with a hold point (`merged`, `compacted` or `object:N`, the
// Nth object of the publication; `delete:N`, the Nth object of a replaced day deleted) it stops
// there and waits to be killed with SIGKILL. Env PMTAPE_TEST_MERGE_RECORDERS (ids, comma-separated)
// and PMTAPE_TEST_MERGE_REPLACE=1 pass `--recorders` and `--replace`.

import { parseArchiveUrl } from '../../../src/config.js';
import { mergeArchiveDay } from '../../../src/storage/index.js';

const [url, endpoint, day, workDir, holdAt] = process.argv.slice(2);
let objects = 0;
let deletes = 0;
const recorders = process.env.PMTAPE_TEST_MERGE_RECORDERS?.split(',');
const hold = (what: string): void => {
  process.stdout.write(`hold ${what}\n`);
  // Never resolves: the parent kills us here.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
};
const r = await mergeArchiveDay(
  { url, ...parseArchiveUrl(url, 'test'), endpoint, region: 'us-east-1', pathStyle: true, maxLagDays: 2 },
  day,
  {
    workDir,
    ...(recorders ? { recorders } : {}),
    replace: process.env.PMTAPE_TEST_MERGE_REPLACE === '1',
    onPhase: (phase) => {
      const name = phase === 'object' ? `object:${++objects}` : phase === 'delete' ? `delete:${++deletes}` : phase;
      process.stdout.write(`phase ${name}\n`);
      if (name === holdAt) hold(name);
    },
  },
);
process.stdout.write(`done ${JSON.stringify({ markets: r.markets, failed: r.published?.failed ?? null, skipped: r.skipped ?? null })}\n`);
