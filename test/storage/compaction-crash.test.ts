// SIGKILL a real compactor process at every publication step and at random moments: the tree is
// always consistent (every visible data file complete, every manifest matching its file, DuckDB
// reads the whole tree), and a rerun completes and produces the same data.

import t from 'tap';
import { spawn } from 'node:child_process';
import { cp, mkdtemp, open, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { checkPartitions } from '../../src/storage/parquet/partition-check.js';
import { listPartitions, readManifest } from '../../src/storage/parquet/manifest.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { rng, writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { crashRounds } from './helpers/proc.js';

const child = fileURLToPath(new URL('./compaction-child.js', import.meta.url));
const day = utcDay(Date.now() - 2 * DAY_MS);

/** Runs the child; kills it when `hold` is printed, or after `afterMs`. Resolves with its output. */
function runChild(dataDir: string, hold: string | null, afterMs: number | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, dataDir, day, hold ?? ''], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = afterMs !== null ? setTimeout(() => p.kill('SIGKILL'), afterMs) : null;
    p.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (hold && out.includes(`step ${hold}\n`)) p.kill('SIGKILL');
    });
    p.on('error', reject);
    p.on('exit', () => {
      if (timer) clearTimeout(timer);
      resolve(out);
    });
  });
}

t.test('a compactor killed at any point leaves old or new state, never half', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'pmtape-crash-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const template = join(base, 'template');
  // Two hours of records: the steps under test are the same as a whole day's, at a fraction of the
  // `book_snapshots` rows, so the test stays well inside tap's timeout on a busy machine.
  await writeFixture(template, { days: [day], booksPerDay: 150, spanMs: 2 * 3600_000 });
  // The reference: an uninterrupted compaction of the same logs.
  const ref = join(base, 'ref');
  await cp(template, ref, { recursive: true });
  await compactDay(ref, day);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const rowsOf = async (dir: string): Promise<string> => {
    const visible = (await Promise.all((await listPartitions(dir)).map((p) => readdir(p.dir))))
      .flat()
      .filter((n) => n.endsWith('.parquet'));
    if (visible.length === 0) return '[]'; // nothing visible yet: the old state
    const r = await conn.runAndReadAll(
      `SELECT family, dataset, count(*) AS n, sum(seq) AS s FROM read_parquet('${dir}/parquet/**/*.parquet', hive_partitioning=true, union_by_name=true) GROUP BY ALL ORDER BY ALL`,
    );
    return JSON.stringify(r.getRowObjectsJson());
  };
  const refRows = await rowsOf(ref);

  // How long an uninterrupted child takes, so random kills land anywhere inside its run.
  const calib = join(base, 'calibrate');
  await cp(template, calib, { recursive: true });
  const t0 = Date.now();
  t.match(await runChild(calib, null, null), /done/);
  const runMs = Date.now() - t0;
  const r = rng(42);
  // A rebuild (a partition file damaged after publication) killed between its two renames.
  const damaged = join(base, 'damaged');
  await cp(ref, damaged, { recursive: true });
  const victim = join(damaged, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`, `book_changes-${day}-0000.parquet`);
  const fh = await open(victim, 'r+');
  await fh.write(Buffer.from('XX'), 0, 2, 300);
  await fh.close();
  const points: { hold: string | null; afterMs: number | null; from?: string }[] = [
    { hold: 'retired', afterMs: null, from: damaged },
    ...['staged', 'manifest', 'renamed'].map((hold) => ({ hold, afterMs: null })),
    // Random instants anywhere in a run (crashRounds: 2 in `npm test`, 100 in `npm run test:crash`).
    ...Array.from({ length: crashRounds(2) }, () => ({ hold: null, afterMs: Math.floor(runMs * r() * 1.1) })),
  ];
  for (const [i, pt] of points.entries()) {
    const dir = join(base, `run${i}`);
    await cp(pt.from ?? template, dir, { recursive: true });
    const out = await runChild(dir, pt.hold, pt.afterMs);
    const label = pt.hold
      ? `killed after step "${pt.hold}"${pt.from ? ' of a rebuild' : ''}`
      : `killed after ${pt.afterMs} ms (${out.split('\n').filter(Boolean).length} steps printed)`;

    // Consistency: every visible data file is complete; every manifest matches its file.
    for (const p of await listPartitions(dir)) {
      const names = await readdir(p.dir);
      const visible = names.filter((n) => n.endsWith('.parquet') && !n.startsWith('_'));
      const m = await readManifest(p.dir);
      if (m) t.same(m.files.map((f) => f.file).sort(), visible.sort(), `${label}: manifest lists exactly the visible files`);
    }
    const problems = (await checkPartitions(dir, false)).filter((c) => !c.ok && !(pt.from && c.file === victim.replace(damaged, dir)));
    t.same(problems, [], `${label}: every published partition matches its manifest`);
    const visibleRows = await rowsOf(dir).catch((e: Error) => `unreadable: ${e.message}`);
    t.notMatch(visibleRows, /unreadable/, `${label}: DuckDB reads every visible file`);

    // A rerun completes and yields exactly the reference data.
    await compactDay(dir, day);
    t.same(
      (await checkPartitions(dir, false)).filter((c) => !c.ok),
      [],
      `${label}: rerun leaves no problem`,
    );
    t.equal(await rowsOf(dir), refRows, `${label}: rerun gives the reference rows`);
    const leftovers = (await Promise.all((await listPartitions(dir)).map((p) => readdir(p.dir))))
      .flat()
      .filter((n) => n.startsWith('_') && n !== '_manifest.json');
    t.same(leftovers, [], `${label}: no staging leftovers after the rerun`);
  }
});
