// `pmtape record` under load killed with SIGKILL at random instants, again and again, then stopped
// cleanly: `verify --repair` completes and `verify` is then clean, every books log keeps its
// invariants (seq strictly increasing, time in order, no delta without a book), and every restart
// left a gap: no hole in the history that is not a gap. Rounds: crashRounds().

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { startSim } from '../../src/sim/server.js';
import type { Recorded } from '../../src/schema/observation.js';
import { cliPath, crashRounds, kill9, startNode } from '../storage/helpers/proc.js';
import { readAll, simConfig, tempDir, violations } from './helpers.js';

const ROUNDS = crashRounds(3);

t.test(`record under load survives ${ROUNDS} kill -9 at random instants`, async (t) => {
  const sim = await startSim({ seed: 17, rate: 800, coins: ['btc', 'eth'], windows: ['5m', '15m'] });
  t.teardown(() => sim.close());
  const dir = tempDir('pmtape-record-crash-');
  const { file } = simConfig(sim.config, dir, { recorders: { catalog_poll_ms: 250 } });
  const starts: number[] = []; // when each run began (before its first record)
  const run = async (kill: boolean): Promise<void> => {
    starts.push(Date.now());
    const child = startNode(cliPath, ['record', '--config', file, '--data-dir', dir, '--kinds', 'clob,catalog']);
    t.teardown(() => kill9(child));
    await child.waitFor(/^ready /, 60_000);
    await new Promise((r) => setTimeout(r, 150 + Math.random() * 1200));
    if (kill) return kill9(child);
    child.proc.kill('SIGTERM');
    t.equal((await child.exited).code, 0, 'the last run stops cleanly on SIGTERM');
  };
  for (let round = 0; round < ROUNDS; round++) await run(true);
  await run(false);

  const verify = (...args: string[]) => spawnSync(process.execPath, [cliPath, 'verify', '--data-dir', dir, ...args], { encoding: 'utf8' });
  const repair = verify('--repair');
  t.equal(
    repair.status,
    0,
    `verify --repair completes (torn tails of logs no later run reopened): ${repair.stdout.split('\n').filter((l) => l.startsWith('repaired')).length} repaired`,
  );
  const clean = verify();
  t.equal(clean.status, 0, `verify is clean: ${clean.stdout.slice(-400)}`);

  const books = await readAll(dir, 'books');
  t.ok(books.size > 0, 'books were recorded');
  let restarts = 0;
  for (const [m, recs] of books) {
    t.same(violations(recs), [], `${m}: seq increasing, time in order, no delta without a book`);
    // Each later run's first record of this market is a gap, unless the log already ended in an
    // open gap (then the hole is covered): a restart never resumes books silently.
    for (const s of starts.slice(1)) {
      const i = recs.findIndex((r) => r.recv_ts >= s);
      if (i <= 0) continue;
      const prev: Recorded = recs[i - 1];
      const covered = (prev.type === 'gap' && prev.end_ts === null) || recs[i].type === 'gap';
      t.ok(covered, `${m}: the restart at ${new Date(s).toISOString()} left a gap (seq ${recs[i].seq} is ${recs[i].type})`);
      restarts++;
    }
  }
  t.ok(restarts > 0, `restarts checked across markets: ${restarts}`);
});
