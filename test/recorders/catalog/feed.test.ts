// The catalog recorder against the sim's catalogue REST: every market's life is recorded as one
// event per change — listed upcoming, open, closed, resolved with a winning outcome — and a poll
// that changes nothing writes nothing; a restart continues from the recorded state.

import t from 'tap';
import { startSim } from '../../../src/sim/server.js';
import { startRecorders } from '../../../src/recorders/host.js';
import type { CatalogEvent, Recorded } from '../../../src/schema/observation.js';
import type { CoinMarket } from '../../../src/schema/market.js';
import { readAll, simConfig, sleep, tempDir } from '../helpers.js';

t.test('a market is recorded from listing to resolution, one event per change', async (t) => {
  const sim = await startSim({ seed: 8, windowScale: 0.003, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { recorders: { catalog_poll_ms: 100 } });
  const host = await startRecorders(config, { kinds: ['catalog'], statusFile: false });
  await sleep(6500);
  await host.stop();
  const logs = await readAll(dir, 'catalog');
  let full = 0;
  for (const [id, recs] of logs) {
    const evs = recs as Recorded<CatalogEvent>[];
    const statuses = evs.map((e) => (e.market as CoinMarket).status).filter((s, i, a) => i === 0 || a[i - 1] !== s);
    if (statuses.join('>') === 'upcoming>open>closed>resolved') {
      full++;
      t.equal(evs[0].event, 'listed', `${id} starts with listed`);
      t.ok(evs.some((e) => e.event === 'status' && e.changed.includes('status')));
      const last = evs[evs.length - 1];
      t.equal(last.event, 'resolved');
      t.match(last.market, { resolution: 'resolved', winning_outcome: /^(Up|Down)$/ });
      t.ok((last.market as CoinMarket).resolved_time !== null, 'resolution time from closedTime');
    }
    // One event per change: consecutive events always differ in a tracked field.
    for (let i = 1; i < evs.length; i++) t.ok(evs[i].changed.length > 0);
    t.ok(
      evs.every((e) => e.market.market_id === id && (e.market as CoinMarket).outcomes.length === 2),
      'identifiers kept',
    );
  }
  t.ok(full > 0, `markets seen through their whole life: ${full}`);
});

t.test('a restarted catalog recorder does not repeat unchanged state', async (t) => {
  const sim = await startSim({ seed: 9, windowScale: 0.05, coins: ['eth'], windows: ['15m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { recorders: { catalog_poll_ms: 100 } });
  const a = await startRecorders(config, { kinds: ['catalog'], statusFile: false });
  await sleep(400);
  await a.stop();
  const before = await readAll(dir, 'catalog');
  const b = await startRecorders(config, { kinds: ['catalog'], statusFile: false });
  await sleep(400);
  await b.stop();
  const after = await readAll(dir, 'catalog');
  for (const [id, recs] of after) {
    const prev = before.get(id);
    if (!prev) continue;
    const added = recs.slice(prev.length) as Recorded<CatalogEvent>[];
    t.notOk(
      added.some((e) => e.event === 'listed'),
      `${id} is not listed twice`,
    );
  }
});
