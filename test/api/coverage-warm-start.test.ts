// `serve` reads every catalogued market's coverage spans before it listens (issue 34 §4, "cost, not
// count"): the first list page a fresh server answers is a warm one, its spans read at start (from
// the compacted day's summary and the logs' census), none by the page. Shown on a real server on an
// ephemeral port over a compacted day: after start the cache holds every market's spans; the first
// page reads no span and answers what reading every log and partition says. (The old code had no
// warm-up: its first page read every span.)

import t from 'tap';
import { startApi } from '../../src/api/server.js';
import { compactDay } from '../../src/storage/testing.js';
import { utcDay } from '../../src/schema/time.js';
import { keysFor, testConfig, tmpDataDir } from './helpers.js';
import { readSpans, writeMarkets, type Spans } from './coverage-fixtures.js';

const ids = ['ws-a', 'ws-b'];

t.test("a fresh server's first coverage page reads no span: they were read at start", async (t) => {
  const dir = tmpDataDir(t);
  const day = utcDay(Date.now() - 2 * 86_400_000);
  const t0 = Date.parse(`${day}T08:00:00.000Z`);
  await writeMarkets(dir, ids, { t0, spreadMs: 500, n: 12, nStep: 5 });
  t.ok((await compactDay(dir, day)).length > 0, 'the day compacted');
  const want: Record<string, Spans> = {};
  for (const id of ids) want[id] = await readSpans(dir, id);
  const keys = await keysFor(dir);
  const api = await startApi(testConfig(dir, { port: 0 }));
  t.teardown(() => api.close());
  const cache = api.app.pmtape.coverage;
  t.ok(cache.reads >= ids.length * 3, 'every span was read at start');
  const reads = cache.reads;
  const res = await fetch(`${api.url}/v3/coverage?family=coin&limit=1000`, { headers: { authorization: `Bearer ${keys.paid}` } });
  t.equal(res.status, 200);
  const body = (await res.json()) as { data: { market_id: string; datasets: Record<string, unknown> }[] };
  t.same(Object.fromEntries(body.data.map((d) => [d.market_id, d.datasets])), want, 'the answer is what reading says');
  t.equal(cache.reads, reads, 'and the page read no span');
});
