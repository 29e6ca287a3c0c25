// One gap rule, one answer everywhere: the `book_snapshots` dataset (read back with DuckDB), the
// API's `/snapshots?interval=1s` and the replay's `book_snapshot_25_1s` lines leave out the same
// seconds and name the same record in each. A `sequence_gap` is written about a second after it
// began, with its start back-dated, after records of that second were applied: the second in which
// it starts has no row anywhere (it had one in all three before, naming a record from before the
// gap). A market's first second is served from its completing checkpoint; the three used to name
// different records (the dataset and the page the checkpoint, the replay the book before it): all
// now name the book observation, as `as_of` does.

import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactDay } from '../../src/storage/testing.js';
import type { BookCheckpoint, Observation } from '../../src/schema/observation.js';
import { catalog, coinMarket, tmpDataDir, writeLog } from './helpers.js';
import { get, iso, startReplayServer, T0 } from './replay-helpers.js';

const DAY = '2026-07-26';
const M = coinMarket.market_id;
const book = (tok: string, t: number, bid: string): Observation => ({
  type: 'book',
  token_id: tok,
  units: 'decimal',
  bids: [[bid, '100']],
  asks: [['0.60', '80']],
  recv_ts: t,
  source_ts: t,
});
const checkpoint = (t: number, bid: string): BookCheckpoint => ({
  type: 'book_checkpoint',
  recv_ts: t,
  source_ts: null,
  origin: 'recorder',
  units: 'decimal',
  books: ['1111', '2222'].map((token_id) => ({ token_id, bids: [[bid, '100']], asks: [['0.60', '80']] })),
});

/** 20 s of a market: books and their checkpoint at 00.300, a delta every 250 ms from 02.500, a back-dated sequence gap and a closed one found late. */
function records(): Observation[] {
  const out: Observation[] = [book('1111', T0 + 300, '0.40'), book('2222', T0 + 300, '0.40'), checkpoint(T0 + 300, '0.40')];
  for (let t = T0 + 2500; t <= T0 + 20_000; t += 250) {
    if (t === T0 + 8250) {
      // The loss began at 07.100 and was noticed at 08.250: deltas of 07.250 – 08.000 were applied meanwhile.
      out.push({ type: 'gap', reason: 'sequence_gap', start_ts: T0 + 7100, end_ts: null, recv_ts: t, source_ts: null, origin: 'recorder' });
      continue;
    }
    if (t === T0 + 8500) {
      out.push(book('1111', t, '0.41'), book('2222', t, '0.41'));
      out.push({ type: 'gap', reason: 'sequence_gap', start_ts: T0 + 7100, end_ts: t, recv_ts: t, source_ts: null, origin: 'recorder' });
      out.push(checkpoint(t, '0.41'));
      continue;
    }
    if (t === T0 + 15_500) {
      // A snapshot showed the rebuilt book had drifted since 14.600: a closed gap, the books stay valid.
      out.push({ type: 'gap', reason: 'sequence_gap', start_ts: T0 + 14_600, end_ts: t, recv_ts: t, source_ts: null, origin: 'recorder' });
    }
    out.push({
      type: 'book_delta',
      token_id: '1111',
      changes: [{ side: 'bid', price: '0.30', size: String(t % 1000) }],
      recv_ts: t,
      source_ts: t,
    });
  }
  return out;
}

t.test('book_snapshots, interval=1s and book_snapshot_25_1s leave out the same seconds and name the same records', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', M, [catalog(coinMarket, T0 - 60_000)]);
  await writeLog(dir, 'coin', 'books', M, records());
  const s = await startReplayServer(t, dir);
  const range = `start_time=${iso(T0)}&end_time=${iso(T0 + 60_000)}`;

  const pageAnswer = await get(
    s.base,
    `/v3/btc/markets/${M}/snapshots?include_orderbook=true&interval=1s&limit=1000&${range}`,
    s.keys.free,
  );
  t.equal(pageAnswer.status, 200, 'the page answers');
  const page = new Map<number, number>(pageAnswer.lines[0].data.map((d: any) => [Date.parse(d.bucket_start) - T0, d.seq]));
  const replayAnswer = await get(s.base, `/v3/replay?family=coin&market_id=${M}&${range}&types=book_snapshot_25_1s`, s.keys.paid);
  t.equal(replayAnswer.status, 200);
  const replay = new Map<number, number>(
    replayAnswer.lines.filter((l) => l.type === 'book_snapshot_25_1s').map((l) => [Date.parse(l.data.bucket_start) - T0, l.seq]),
  );

  await compactDay(dir, DAY);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  const rows = (
    await conn.runAndReadAll(`SELECT epoch_ms(bucket_start) AS t, min(seq) AS seq, count(*) AS n FROM read_parquet('${dir}/parquet/family=coin/dataset=book_snapshots/**/*.parquet')
    WHERE market_id = '${M}' GROUP BY 1 ORDER BY 1`)
  ).getRowObjectsJS() as { t: number; seq: bigint; n: bigint }[];
  const dataset = new Map<number, number>(rows.map((r) => [Number(r.t) - T0, Number(r.seq)]));
  t.ok(
    rows.every((r) => Number(r.n) === 2),
    'one row per outcome',
  );

  const seconds = (m: Map<number, number>): number[] => [...m.keys()].map((k) => k / 1000);
  const want = [1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 16, 17, 18, 19];
  t.same(seconds(dataset), want, 'book_snapshots: no row for 07 (the gap began at 07.100), 08 (open), 14 – 15 (found late)');
  t.same(seconds(page), want, 'interval=1s: the same seconds');
  t.same(seconds(replay), want, 'book_snapshot_25_1s: the same seconds');
  t.same([...page.entries()], [...dataset.entries()], 'the page names the same record as the dataset in every second');
  t.same([...replay.entries()], [...dataset.entries()], 'the replay names the same record as the dataset in every second');
  t.equal(replay.get(1000), 2, 'the replay names the book the completing checkpoint restates (seq 2), as as_of does');
  t.equal(dataset.get(1000), 2, 'so does the dataset, which starts reading at that checkpoint (it named the checkpoint, seq 3)');
});
