// A catalogue change the disk refused is not lost: while the disk is full the catalog writer is
// paused and drops what it is given, and memory already holds the new state, so before the fix no
// later poll saw a difference and a market resolved during the outage never got its resolution
// in the log. Now the market's next poll is diffed against its log again, and the change is
// written once the disk takes writes. Real sim (markets live about a second), real writers,
// injected ENOSPC.

import t from 'tap';
import { startSim } from '../../../src/sim/server.js';
import { startRecorders } from '../../../src/recorders/host.js';
import { injectDiskFault } from '../../../src/storage/testing.js';
import type { CatalogEvent, Recorded } from '../../../src/schema/observation.js';
import type { CoinMarket } from '../../../src/schema/market.js';
import { marketsIn, normalizeCatalogMarket } from '../../../src/recorders/catalog/normalize.js';
import { readAll, simConfig, tempDir, waitFor } from '../helpers.js';

t.teardown(() => injectDiskFault(null));

const statusOf = (e: Recorded): string => ((e as Recorded<CatalogEvent>).market as CoinMarket).status;

t.test('a market resolved while the disk was full gets its resolution in the log once the disk frees', async (t) => {
  const sim = await startSim({ seed: 14, windowScale: 0.003, coins: ['btc'], windows: ['5m'] });
  t.teardown(() => sim.close());
  const dir = tempDir();
  const { config } = simConfig(sim.config, dir, { storage: { min_free_bytes: 0 }, recorders: { catalog_poll_ms: 100 } });
  const host = await startRecorders(config, { kinds: ['catalog'], statusFile: false });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : host.stop()));

  // Markets recorded open: each closes and resolves within a few seconds.
  t.ok(
    await waitFor(
      async () => [...(await readAll(dir, 'catalog'))].filter(([, recs]) => recs.some((e) => statusOf(e) === 'open')).length >= 2,
      30_000,
    ),
    'markets are recorded open',
  );

  injectDiskFault(() => 'ENOSPC');
  // The live ones are chosen once writes fail: a market chosen before could resolve, and get its
  // resolution written, between the choice and the fault (CI saw it on a slow machine).
  t.ok(await waitFor(() => host.sink.storageStats().dropped_records > 0, 30_000), 'writes fail');
  const unresolved = (logs: Map<string, Recorded[]>): string[] =>
    [...logs]
      .filter(([, recs]) => recs.some((e) => statusOf(e) === 'open') && !recs.some((e) => statusOf(e) === 'resolved'))
      .map(([id]) => id);
  const live = unresolved(await readAll(dir, 'catalog'));
  t.ok(live.length >= 1, `markets live when the disk filled: ${live.join(', ')}`);
  // Their closing and resolution happen upstream meanwhile (their writers pause and drop them).
  const resolvedUpstream = async (): Promise<Set<string>> => {
    const body = await (await fetch(`${sim.url}/catalog/events?series_slug=btc-up-or-down-5m&limit=500`)).json();
    return new Set(
      marketsIn(body)
        .map((raw) => normalizeCatalogMarket(raw, Date.now()))
        .filter((m) => m?.status === 'resolved')
        .map((m) => m!.market_id),
    );
  };
  t.ok(
    await waitFor(
      async () => {
        const done = await resolvedUpstream();
        return live.every((id) => done.has(id));
      },
      30_000,
      50,
    ),
    'the live markets resolved upstream while the disk was full',
  );
  const whileFull = await readAll(dir, 'catalog');
  t.ok(
    live.every((id) => !whileFull.get(id)!.some((e) => statusOf(e) === 'resolved')),
    'none of their resolutions is in the logs yet',
  );
  injectDiskFault(null);

  t.ok(
    await waitFor(async () => {
      const logs = await readAll(dir, 'catalog');
      return live.every((id) => logs.get(id)?.some((e) => statusOf(e) === 'resolved'));
    }, 30_000),
    'every one of them has its resolution in its log after the disk frees',
  );
  await host.stop();
  stopped = true;
  const logs = await readAll(dir, 'catalog');
  for (const id of live) {
    const evs = logs.get(id)! as Recorded<CatalogEvent>[];
    const last = evs[evs.length - 1];
    t.match(
      last,
      { event: 'resolved', market: { resolution: 'resolved', winning_outcome: /^(Up|Down)$/ } },
      `${id}: the resolved event is its last`,
    );
    for (let i = 1; i < evs.length; i++)
      t.ok(evs[i].changed.length > 0 && evs[i].seq === evs[i - 1].seq + 1, `${id}: one event per change, seq in order`);
  }
});
