// `pmtape record` as a real child process against the loopback sim: killed with SIGKILL and
// restarted, the logs hold no corrupt or duplicate records and the downtime is a not_recording gap;
// SIGTERM flushes, closes and exits 0.

import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSim } from '../../src/sim/server.js';
import type { Recorded } from '../../src/schema/observation.js';
import { gapsOf, readAll, simConfig, sleep, tempDir, violations } from './helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));

function startRecord(file: string, dir: string): { child: ChildProcess; ready: Promise<void>; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [CLI, 'record', '--config', file, '--data-dir', dir, '--kinds', 'clob,catalog'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/^ready /m.test(out)) resolve();
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`record exited ${code} before ready: ${err.slice(0, 500)}`)));
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, ready, exit };
}

t.test('record survives SIGKILL: no corrupt or duplicate records, the downtime is a not_recording gap', async (t) => {
  const sim = await startSim({ seed: 11, windowScale: 0.02, rate: 300, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { file } = simConfig(sim.config, dir, { stale_after_ms: 1000, recorders: { ping_interval_ms: 300, catalog_poll_ms: 250 } });

  const first = startRecord(file, dir);
  t.teardown(() => first.child.kill('SIGKILL'));
  await first.ready;
  await sleep(1500);
  first.child.kill('SIGKILL');
  t.equal(await first.exit, null, 'killed');
  const before = await readAll(dir, 'books');
  t.ok(before.size > 0, 'books were recorded before the kill');
  const lastBefore = new Map<string, Recorded>();
  for (const [m, recs] of before) if (recs.length) lastBefore.set(m, recs[recs.length - 1]);

  await sleep(300);
  const second = startRecord(file, dir);
  t.teardown(() => second.child.kill('SIGKILL'));
  await second.ready;
  await sleep(1500);
  second.child.kill('SIGTERM');
  t.equal(await second.exit, 0, 'SIGTERM exits 0');

  const after = await readAll(dir, 'books');
  let resumed = 0;
  for (const [m, recs] of after) {
    t.same(violations(recs), [], `${m}: log invariants hold`);
    const seqs = new Set(recs.map((r) => r.seq));
    t.equal(seqs.size, recs.length, `${m}: no seq twice`);
    const last = lastBefore.get(m);
    if (!last) continue;
    // Everything acknowledged before the kill is still there, unchanged.
    const same = recs.find((r) => r.seq === last.seq);
    t.same(same, last, `${m}: the last record before the kill survived`);
    const later = recs.filter((r) => r.seq > last.seq);
    if (later.length === 0) continue;
    if (last.type === 'gap' && last.end_ts === null) continue;
    const gap = gapsOf(later).find((g) => g.reason === 'not_recording');
    t.ok(gap, `${m}: a not_recording gap follows the restart`);
    t.equal(gap!.start_ts, last.recv_ts, `${m}: the gap starts at the last record before the kill`);
    const closed = gapsOf(later).find((g) => g.reason === 'not_recording' && g.end_ts !== null && g.end_ts !== g.start_ts);
    if (closed) {
      resumed++;
      t.equal(closed.start_ts, last.recv_ts);
      t.ok(closed.end_ts! > last.recv_ts + 300, 'the closed gap spans the downtime');
    }
  }
  t.ok(resumed > 0, `markets resumed with a closed downtime gap: ${resumed}`);
});
