// A self-hoster's full disk, on a real filesystem with real processes (a tmpfs; mounting needs root,
// elsewhere test/recorders/disk-pause.test.ts covers the same rules with injected faults):
// `record` pauses its writers and says so once per writer, /healthz turns degraded and /metrics
// shows the paused writers while the API keeps serving; freed, the same markets resume; SIGTERM
// exits 0 and `verify` is clean. `compact` on a full disk fails cleanly and succeeds once freed.

import t from 'tap';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { startSim } from '../../src/sim/server.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { freeBytes, verifyDataDir } from '../../src/storage/index.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { smallFs } from '../storage/helpers/small-fs.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { gapsOf, readAll, simConfig, violations } from '../recorders/helpers.js';
import { getJson, runCli, runCliOnce, tempDir, waitFor } from './helpers.js';

/**
 * Takes all but about `leave` bytes of the filesystem holding `dir` with one file (in chunks, and
 * up to ENOSPC: a recorder may be writing at the same time); returns its path.
 */
async function fill(dir: string, leave: number): Promise<string> {
  const path = join(dir, 'filler');
  const target = Math.max(0, ((await freeBytes(dir)) ?? 0) - leave);
  const chunk = Buffer.alloc(64 * 1024);
  const fd = openSync(path, 'w');
  try {
    for (let done = 0; done < target; done += chunk.length) writeSync(fd, chunk, 0, Math.min(chunk.length, target - done));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  return path;
}

t.test('record on a disk that fills: paused, degraded, still serving; freed: resumed, clean', async (t) => {
  const fs = smallFs(t, 32 * 1024 * 1024);
  if (!fs) {
    t.comment('skipped: needs root to mount a tmpfs (test/recorders/disk-pause.test.ts injects the same faults)');
    return;
  }
  const data = join(fs, 'data');
  mkdirSync(data);
  const sim = await startSim({ seed: 41, rate: 300, coins: ['btc'], windows: ['5m', '15m'] });
  t.teardown(() => sim.close());
  const cfgDir = tempDir(t);
  const { file } = simConfig(sim.config, cfgDir, { storage: { min_free_bytes: 0 }, recorders: { catalog_poll_ms: 250 } });
  const key = (await createKey(data, 'paid', 'disk-test')).key;
  const serve = runCli(t, ['serve', '--port', '0', '--data-dir', data], { env: { PMTAPE_RATE_LIMITS: 'off' } });
  const url = await serve.ready;
  const rec = runCli(t, ['record', '--config', file, '--data-dir', data, '--kinds', 'clob,catalog'], { env: { PMTAPE_LOG_LEVEL: 'info' } });
  await rec.ready;
  const recorded = async () => [...(await readAll(data, 'books')).values()].reduce((n, r) => n + r.length, 0);
  t.ok(await waitFor(async () => (await recorded()) >= 50, 60_000), 'books are recorded');

  const filler = await fill(fs, 0);
  const health = async () => (await getJson(`${url}/healthz`)).body;
  const degraded = await waitFor(async () => {
    const h = await health();
    return h.status === 'degraded' && h.recorders.some((r: any) => r.alive && r.storage.paused_writers > 0) ? h : null;
  }, 60_000);
  t.ok(degraded, `/healthz says degraded while writers are paused: ${JSON.stringify(degraded?.recorders?.[0]?.storage)}`);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /^pmtape_storage_paused_writers [1-9]\d*$/m, '/metrics counts the paused writers');
  t.match(metrics, /^pmtape_storage_free_bytes \d+$/m, '/metrics has the free bytes');
  const markets = await getJson(`${url}/v3/btc/markets`, key);
  t.equal(markets.status, 200, 'the API keeps serving');
  const id = markets.body.data[0]?.market_id;
  if (id) t.not((await getJson(`${url}/v3/btc/markets/${id}/snapshots?limit=5`, key)).status, 500, 'books are served, never a 5xx');
  const linesAt = rec.stdout.split('\n').length;
  const droppedAt = (await health()).recorders[0].storage.dropped_records;
  t.ok(
    await waitFor(async () => (await health()).recorders[0].storage.dropped_records > droppedAt + 100, 60_000),
    'records keep arriving and are dropped, counted',
  );
  const newLines = rec.stdout
    .split('\n')
    .slice(linesAt - 1)
    .filter((l) => /storage|append|ENOSPC|status file/.test(l));
  t.ok(newLines.length <= 4, `no line per record while paused: ${newLines.length} storage lines while over 100 records were dropped`);
  t.notMatch(rec.stdout, /append failed/, 'no error line per failed append');

  rmSync(filler);
  t.ok(await waitFor(async () => (await health()).status === 'ok', 60_000), 'freed: /healthz is ok again');
  const after = await recorded();
  t.ok(await waitFor(async () => (await recorded()) > after + 20, 60_000), 'recording goes on');
  t.equal(await rec.stop(30_000), 0, 'SIGTERM exits 0');
  // Per log: paused and resumed lines alternate (a market that ended while paused has no resume).
  const changes = new Map<string, string[]>();
  for (const l of rec.stdout.split('\n')) {
    if (!l.startsWith('{')) continue;
    const o = JSON.parse(l) as { msg?: string; stream?: string; market?: string };
    const m = /^storage: writer (paused|resumed)/.exec(o.msg ?? '');
    if (m) changes.set(`${o.stream}/${o.market}`, [...(changes.get(`${o.stream}/${o.market}`) ?? []), m[1]]);
  }
  const alternating = [...changes.values()].every((seq) => seq.every((x, i) => x === (i % 2 ? 'resumed' : 'paused')));
  t.ok(changes.size >= 1 && alternating, `one line per writer state change: ${JSON.stringify(Object.fromEntries(changes))}`);
  t.ok(
    [...changes.values()].some((seq) => seq.includes('resumed')),
    'writers resumed',
  );
  t.same(
    (await verifyDataDir(data, { repair: false })).filter((c) => !c.ok),
    [],
    'verify is clean',
  );
  const books = await readAll(data, 'books');
  let gaps = 0;
  for (const [m, recs] of books) {
    t.same(violations(recs), [], `${m}: log invariants hold`);
    gaps += gapsOf(recs).filter((g) => g.reason === 'storage_error' && g.end_ts !== null).length;
  }
  t.ok(gaps >= 1, `closed storage_error gaps: ${gaps}`);
  // The API's coverage of such a market lists the hole with its reason.
  const hit = [...books].find(([, recs]) => gapsOf(recs).some((g) => g.reason === 'storage_error' && g.end_ts !== null));
  const cov = await getJson(`${url}/v3/coverage?family=coin&market_id=${hit![0]}`, key);
  t.equal(cov.status, 200);
  t.ok(
    cov.body.data.gaps.some((g: { reason: string; end: string | null }) => g.reason === 'storage_error' && g.end !== null),
    `coverage lists the storage_error gap: ${JSON.stringify(cov.body.data.gaps)}`,
  );
});

t.test('storage.min_free_bytes: writers pause before the filesystem is full, and resume once there is room', async (t) => {
  const fs = smallFs(t, 32 * 1024 * 1024);
  if (!fs) {
    t.comment('skipped: needs root to mount a tmpfs');
    return;
  }
  const data = join(fs, 'data');
  mkdirSync(data);
  const sim = await startSim({ seed: 43, rate: 300, coins: ['btc'], windows: ['5m', '15m'] });
  t.teardown(() => sim.close());
  const { file } = simConfig(sim.config, tempDir(t), { storage: { min_free_bytes: 8 * 1024 * 1024 }, recorders: { catalog_poll_ms: 250 } });
  const rec = runCli(t, ['record', '--config', file, '--data-dir', data, '--kinds', 'clob,catalog'], { env: { PMTAPE_LOG_LEVEL: 'info' } });
  await rec.ready;
  const recorded = async () => [...(await readAll(data, 'books')).values()].reduce((n, r) => n + r.length, 0);
  t.ok(await waitFor(async () => (await recorded()) >= 50, 60_000), 'books are recorded');
  const filler = await fill(fs, 4 * 1024 * 1024);
  t.ok(await waitFor(async () => rec.stdout.includes('below storage.min_free_bytes'), 60_000), 'the guard pauses the writers');
  const atPause = await recorded();
  t.ok(await waitFor(async () => rec.stdout.includes('storage: writer paused'), 60_000));
  t.notMatch(rec.stdout, /ENOSPC/, 'before the filesystem refused anything');
  t.ok(((await freeBytes(fs)) ?? 0) > 1024 * 1024, 'room is left for compaction and the API');
  rmSync(filler);
  t.ok(await waitFor(async () => rec.stdout.includes('storage: writer resumed'), 60_000), 'free again: the writers resume');
  t.ok(await waitFor(async () => (await recorded()) > atPause + 20, 60_000), 'recording goes on');
  t.equal(await rec.stop(30_000), 0, 'SIGTERM exits 0');
  t.same(
    (await verifyDataDir(data, { repair: false })).filter((c) => !c.ok),
    [],
    'verify is clean',
  );
  for (const [m, recs] of await readAll(data, 'books')) t.same(violations(recs), [], `${m}: log invariants hold`);
});

t.test('compact on a full disk fails cleanly, and the next run succeeds once space returns', async (t) => {
  const fs = smallFs(t, 48 * 1024 * 1024);
  if (!fs) {
    t.comment('skipped: needs root to mount a tmpfs');
    return;
  }
  const data = join(fs, 'data');
  const day = utcDay(Date.now() - 9 * DAY_MS); // past the default 7-day retention: deletable once verified
  await writeFixture(data, { days: [day], booksPerDay: 400, levels: 40 });
  const logsBefore = (await readAll(data, 'books')).size;
  const filler = await fill(fs, 16 * 1024);
  const failed = await runCliOnce(['compact', '--date', day, '--data-dir', data], { timeoutMs: 120_000 });
  t.equal(failed.code, 1, 'compact exits 1');
  t.match(failed.stderr, /disk is full: nothing was published, no log was deleted/, `it says why: ${failed.stderr.trim().slice(-300)}`);
  const parquet = join(data, 'parquet');
  const published = existsSync(parquet)
    ? readdirSync(parquet, { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('.parquet'))
    : [];
  t.same(published, [], 'no partition is published');
  const staging = join(data, '_parquet-staging');
  const staged = existsSync(staging) ? readdirSync(staging).filter((n) => n !== '.lock') : [];
  t.same(staged, [], 'the staging folder is emptied');
  t.equal((await readAll(data, 'books')).size, logsBefore, 'retention deleted no log');
  rmSync(filler);
  const ok = await runCliOnce(['compact', '--date', day, '--data-dir', data], { timeoutMs: 120_000 });
  t.equal(ok.code, 0, `the next run succeeds: ${ok.stderr.slice(-300)}`);
  t.match(ok.stdout, /^written family=coin\/dataset=book_changes/m);
  t.same(
    (await verifyDataDir(data, { repair: false })).filter((c) => !c.ok),
    [],
    'verify is clean',
  );
});
