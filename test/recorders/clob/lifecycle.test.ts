// The clob + catalog recorders against the loopback sim (real sockets, real logs), with and
// without each fault: the recorders keep running, write gap records with the right reasons and
// spans, never record a delta onto a stale book, and catch up.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { startSim } from '../../../src/sim/server.js';
import { startRecorders } from '../../../src/recorders/host.js';
import { statusPath } from '../../../src/recorders/status.js';
import type { Recorded } from '../../../src/schema/observation.js';
import { gapsOf, readAll, simConfig, sleep, tempDir, violations, waitFor } from '../helpers.js';

// Short timers keep the test quick; the watchdog is only tightened where a stall is the point.
const FAST = { stale_after_ms: 3000, recorders: { ping_interval_ms: 200, backoff_min_ms: 50, backoff_max_ms: 300, catalog_poll_ms: 250 } };

async function run(t: { teardown(fn: () => unknown): void }, faults: string, ms: number, over: Record<string, unknown> = {}) {
  const sim = await startSim({ seed: 7, windowScale: 0.02, rate: 400, faults, coins: ['btc', 'eth'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { ...FAST, ...over, storage: { checkpoint_every_deltas: 50, checkpoint_every_ms: 1000 } });
  const errors: string[] = [];
  const host = await startRecorders(config, { kinds: ['clob', 'catalog'], onError: (_k, e) => errors.push(e.code) });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await host.stop();
  });
  const statusSeen = await waitFor(() => existsSync(statusPath(dir)), 3000);
  await sleep(ms);
  const status = host.status();
  stopped = true;
  await host.stop();
  const books = await readAll(dir, 'books');
  const catalog = await readAll(dir, 'catalog');
  return { dir, books, catalog, errors, status, statusSeen };
}

function allViolations(books: Map<string, Recorded[]>): string[] {
  return [...books].flatMap(([m, recs]) => violations(recs).map((v) => `${m}: ${v}`));
}

t.test('records books, checkpoints and catalogue events from the sim, and stops cleanly', async (t) => {
  const r = await run(t, '', 2000);
  t.ok(r.statusSeen, 'status file written while running');
  t.notOk(existsSync(statusPath(r.dir)), 'status file removed on a clean stop');
  t.ok(r.status.kinds.clob.connected && r.status.kinds.catalog.connected);
  t.ok(r.status.connected.coin.length > 0, 'markets listed as connected');
  t.ok(r.books.size >= 2, `books logs: ${r.books.size}`);
  const recs = [...r.books.values()].flat();
  const count = (type: string): number => recs.filter((x) => x.type === type).length;
  t.ok(
    count('book') > 0 && count('book_delta') > 50 && count('book_checkpoint') > 0,
    `book ${count('book')} delta ${count('book_delta')} cp ${count('book_checkpoint')}`,
  );
  t.same(allViolations(r.books), []);
  for (const [, list] of r.books) {
    const last = list[list.length - 1];
    t.match(last, { type: 'gap', reason: 'not_recording', end_ts: null }, 'a stop leaves an open not_recording gap');
  }
  const events = [...r.catalog.values()].flat();
  t.ok(events.every((e) => e.type === 'catalog'));
  t.ok(events.some((e) => e.type === 'catalog' && e.event === 'listed'));
  // A machine loaded enough to starve the event loop past the watchdog may see a stale drop;
  // nothing else may go wrong without faults.
  t.same(
    r.errors.filter((c) => c !== 'stale' && c !== 'disconnected'),
    [],
  );
});

t.test('connection drops become closed disconnected gaps and the books come back', async (t) => {
  const r = await run(t, 'drop=700ms', 2500);
  const gaps = [...r.books.values()].flatMap(gapsOf);
  const closed = gaps.filter((g) => g.reason === 'disconnected' && g.end_ts !== null);
  t.ok(closed.length > 0, `closed disconnected gaps: ${closed.length}`);
  for (const g of closed) t.ok(g.end_ts! >= g.start_ts && g.end_ts! - g.start_ts < 15_000, 'span covers the reconnect');
  t.same(allViolations(r.books), []);
  t.ok(r.errors.includes('disconnected'));
  // caught up: after a closed disconnected gap (fresh books arrived) changes are recorded again
  let resumed = 0;
  for (const [, recs] of r.books) {
    const i = recs.findIndex((x) => x.type === 'gap' && x.reason === 'disconnected' && x.end_ts !== null);
    if (i >= 0 && recs.slice(i).some((x) => x.type === 'book_delta')) resumed++;
  }
  t.ok(resumed > 0, `markets recording changes again after a reconnect: ${resumed}`);
});

t.test('a silent stall is detected by the heartbeat watchdog as a stale gap', async (t) => {
  const r = await run(t, 'stall=0.004,stall_ms=5000', 3500, { stale_after_ms: 800 });
  const stale = [...r.books.values()].flatMap(gapsOf).filter((g) => g.reason === 'stale');
  t.ok(stale.length > 0, 'stale gaps written');
  t.ok(r.errors.includes('stale'));
  t.same(allViolations(r.books), []);
  t.ok(
    stale.some((g) => g.end_ts !== null),
    'the recorder reconnected and closed a stale gap',
  );
});

t.test('garbage, skipped, duplicated and unknown messages never corrupt a recorded book', async (t) => {
  const r = await run(t, 'garbage=0.01,gap=0.02,dup=0.02,unknown=0.02', 2500);
  t.same(allViolations(r.books), [], 'every divergence is marked by a sequence_gap, no delta on a stale book');
  const reasons = new Set([...r.books.values()].flatMap(gapsOf).map((g) => g.reason));
  t.ok(reasons.has('upstream_error'), 'garbage frames open upstream_error gaps');
  t.ok(reasons.has('sequence_gap'), 'lost changes are detected');
  t.ok(r.errors.includes('malformed') && r.errors.includes('unknown_type'));
  t.ok(r.status.kinds.clob.connected, 'still connected at the end');
  t.ok(r.status.kinds.clob.messages > 200);
});

t.test('429 with Retry-After, 5xx and slow answers are survived on REST and WebSocket upgrades', async (t) => {
  const r = await run(t, 'http429=0.2,http5xx=0.2,slow=0.1,slow_ms=300,retry_after_s=0.3', 2500);
  t.ok(r.errors.includes('http_429') || r.errors.includes('http_5xx'), 'upstream trouble was seen and counted');
  t.ok(r.catalog.size > 0, 'the catalogue was recorded anyway');
  t.ok(
    [...r.books.values()].flat().some((x) => x.type === 'book'),
    'books were recorded anyway',
  );
  t.same(allViolations(r.books), []);
});

t.test('the status file says which process records which markets', async (t) => {
  const sim = await startSim({ seed: 3, windowScale: 0.02, rate: 50, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { ...FAST, recorders: { ...FAST.recorders, status_interval_ms: 200 } });
  const host = await startRecorders(config, { kinds: ['clob'] });
  t.teardown(() => host.stop());
  t.ok(
    await waitFor(() => {
      try {
        const s = JSON.parse(readFileSync(statusPath(dir), 'utf8'));
        return s.connected.coin.length > 0 && s.kinds.clob.messages > 0;
      } catch {
        return false;
      }
    }, 5000),
    'status lists connected coin markets',
  );
  const s = JSON.parse(readFileSync(statusPath(dir), 'utf8'));
  t.equal(s.pid, process.pid);
  t.ok(s.updated_ts >= s.started_ts);
  t.same(Object.keys(s.kinds).sort(), ['catalog', 'clob'], 'clob brings the catalog it depends on');
});
