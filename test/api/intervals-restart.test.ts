// A recorder killed with -9 writes nothing until it restarts; then its first record is a
// `not_recording` gap that starts at the last record it had kept. Interval snapshots must treat
// the whole downtime as a gap, not forward-fill the book from before the kill: the API's
// `interval=1s`, the replay's `book_snapshot_25_1s` lines and the `book_snapshots` dataset agree.

import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/testing.js';
import type { Observation } from '../../src/schema/observation.js';
import { catalog, coinMarket, keysFor, testApp, testConfig, tmpDataDir, writeLog, T0 } from './helpers.js';

const KILLED = T0 + 4000; // the last record kept before the kill
const RESTART = T0 + 12_000; // the restart's gap, then fresh books
const END = T0 + 20_000;

function records(): Observation[] {
  const out: Observation[] = [];
  const book = (tok: string, at: number): Observation => ({
    type: 'book',
    token_id: tok,
    units: 'decimal',
    bids: [['0.48', '10']],
    asks: [['0.52', '10']],
    recv_ts: at,
    source_ts: at,
  });
  out.push(book('1111', T0), book('2222', T0));
  for (let at = T0 + 1000; at <= KILLED; at += 1000)
    out.push({
      type: 'book_delta',
      token_id: '1111',
      changes: [{ side: 'bid', price: '0.47', size: String((at % 1000) + 1 + (at - T0) / 1000) }],
      recv_ts: at,
      source_ts: at,
    });
  out.push({
    type: 'gap',
    reason: 'not_recording',
    start_ts: KILLED,
    end_ts: null,
    recv_ts: RESTART,
    source_ts: null,
    detail: 'recorder was not running',
  });
  out.push(book('1111', RESTART), book('2222', RESTART));
  out.push({ type: 'gap', reason: 'not_recording', start_ts: KILLED, end_ts: RESTART, recv_ts: RESTART, source_ts: null });
  for (let at = RESTART + 1000; at <= END; at += 1000)
    out.push({
      type: 'book_delta',
      token_id: '2222',
      changes: [{ side: 'ask', price: '0.53', size: String((at - T0) / 1000) }],
      recv_ts: at,
      source_ts: at,
    });
  return out;
}

const seconds = (from: number, to: number): number[] => Array.from({ length: (to - from) / 1000 }, (_, i) => from + i * 1000);

t.test('the downtime before a restart gap is a gap everywhere, never a forward-filled book', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', coinMarket.market_id, [catalog(coinMarket, T0 - 1000)]);
  await writeLog(dir, 'coin', 'books', coinMarket.market_id, records());
  const { paid } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${paid}` } });
  // Before the kill, and from the restart on; the seconds between are the downtime.
  const want = [...seconds(T0, KILLED), ...seconds(RESTART, END)];

  const page = (
    await get(`/v3/btc/markets/${coinMarket.market_id}/snapshots?interval=1s&limit=1000&start_time=${T0}&end_time=${END + 5000}`)
  ).json();
  t.same(
    page.data.map((s: { bucket_start: string }) => Date.parse(s.bucket_start)),
    want,
    'API interval=1s: no second of the downtime',
  );
  t.same(
    page.gaps,
    [
      { start: new Date(KILLED).toISOString(), end: new Date(RESTART).toISOString(), reason: 'not_recording' },
      { start: new Date(END).toISOString(), end: new Date(END + 5000).toISOString(), reason: 'not_recording' },
    ],
    'the downtime is listed as a not_recording gap',
  );

  // A page that ends inside the downtime sees the gap written after it, too.
  const early = (
    await get(`/v3/btc/markets/${coinMarket.market_id}/snapshots?interval=1s&limit=1000&start_time=${T0}&end_time=${T0 + 8000}`)
  ).json();
  t.same(
    early.data.map((s: { bucket_start: string }) => Date.parse(s.bucket_start)),
    seconds(T0, KILLED),
    'a range ending before the restart is cut at the kill',
  );

  const replay = await get(
    `/v3/replay?family=coin&market_id=${coinMarket.market_id}&start_time=${T0}&end_time=${END + 1}&types=book_snapshot_5_1s`,
  );
  const lines = replay.body
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; data: { bucket_start: string } });
  t.same(
    lines.filter((l) => l.type === 'book_snapshot_5_1s').map((l) => Date.parse(l.data.bucket_start)),
    want,
    'replay samples: the same seconds',
  );
  const short = await get(
    `/v3/replay?family=coin&market_id=${coinMarket.market_id}&start_time=${T0}&end_time=${T0 + 8000}&types=book_snapshot_5_1s`,
  );
  const shortLines = short.body
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; data: { bucket_start: string } });
  t.same(
    shortLines.filter((l) => l.type === 'book_snapshot_5_1s').map((l) => Date.parse(l.data.bucket_start)),
    seconds(T0, KILLED),
    'a replay ending before the restart: cut at the kill',
  );

  await compactDay(dir, '2026-07-26');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const rows = (
    await conn.runAndReadAll(
      `SELECT DISTINCT epoch_ms(bucket_start) AS s FROM read_parquet('${dir}/parquet/family=coin/dataset=book_snapshots/**/*.parquet') ORDER BY s`,
    )
  ).getRowObjectsJS();
  // The log ends at END inside the day: the dataset stops at the last whole second before it.
  t.same(
    rows.map((r) => Number(r.s)),
    want,
    'book_snapshots: the same seconds',
  );
});
