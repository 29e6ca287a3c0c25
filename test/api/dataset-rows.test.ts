// `GET /v3/datasets/rows` on a real server: one market's rows of a dataset over a time range as an
// Arrow IPC stream. The same rows (schema and values) before compaction, after it and after the logs
// are deleted; the rows DuckDB selects from the partitions with the same filter; readable as is by
// apache-arrow and polars; ranges across a compacted day and a log day; every refusal with the
// envelope; a part file that fails mid-stream closes the connection without the end marker.

import t from 'tap';
import { existsSync, readdirSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';
import pl from 'nodejs-polars';
import { duckExpr, polarsExpr } from './engine-text.js';
import { compactDay, deleteExpiredLogs, columnsOf, ROW_DATASETS, type RowDataset } from '../../src/storage/testing.js';
import type { Family } from '../../src/schema/observation.js';
import { DAY_MS, dayStartMs } from '../../src/schema/time.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir, T0, type Tap } from './helpers.js';

const DAY = '2026-07-26';
const TICKER = 'KXBTC15M-26JUL261215-15';
const MARKETS: Record<Family, string> = { coin: '540817', 'wallet-prediction': 'w-9001', 'yesno-exchange': TICKER };
const idParam = (f: Family): string => (f === 'yesno-exchange' ? 'ticker' : 'market_id');

/** Ranges: inside the recording (cuts row groups mid-way), and the whole day. */
const RANGES: [number, number][] = [
  [T0 + 10_000, T0 + 70_000],
  [dayStartMs(DAY)!, dayStartMs(DAY)! + DAY_MS],
];

async function serve(t: Tap, dir: string): Promise<string> {
  const app = await testApp(t, testConfig(dir));
  return app.listen({ port: 0, host: '127.0.0.1' });
}

const rowsUrl = (base: string, family: Family, dataset: string, market: string, start: number, end: number): string =>
  `${base}/v3/datasets/rows?family=${family}&dataset=${dataset}&${idParam(family)}=${encodeURIComponent(market)}&start_time=${start}&end_time=${end}`;

/** The body of a rows request (status 200 asserted by the caller through `status`). */
async function getRows(url: string, key: string): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
}

/** Rows as plain JSON (bigints and decimals as text), for comparing two reads of the same range. */
const plain = (tb: Table): string =>
  JSON.stringify(
    tb.toArray().map((r) => r.toJSON()),
    (_k, v) => (typeof v === 'bigint' ? String(v) : v),
  );

/** The receive times of a table, epoch ms. */
const receiveTimes = (tb: Table): number[] => Array.from({ length: tb.numRows }, (_, i) => tb.getChild('receive_time')!.get(i) as number);

t.test('the same rows before compaction, after it, after the logs are deleted, and as DuckDB selects them', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { paid } = await keysFor(dir);
  const cases: { family: Family; dataset: RowDataset; range: [number, number] }[] = [];
  for (const family of Object.keys(MARKETS) as Family[])
    for (const dataset of ROW_DATASETS) for (const range of RANGES) cases.push({ family, dataset, range });
  const read = async (): Promise<Map<string, { body: Buffer; table: Table }>> => {
    const base = await serve(t, dir);
    const out = new Map<string, { body: Buffer; table: Table }>();
    for (const c of cases) {
      const r = await getRows(rowsUrl(base, c.family, c.dataset, MARKETS[c.family], ...c.range), paid);
      t.equal(r.status, 200, `${c.family} ${c.dataset} ${c.range.join('..')}: 200`);
      t.equal(r.type, 'application/vnd.apache.arrow.stream');
      out.set(`${c.family}/${c.dataset}/${c.range[0]}`, { body: r.body, table: tableFromIPC(r.body) });
    }
    return out;
  };
  const fromLogs = await read();
  await compactDay(dir, DAY);
  const compacted = await read();
  await deleteExpiredLogs(dir, Date.now(), 0);
  t.equal(readdirSync(join(dir, 'logs'), { recursive: true }).filter((f) => String(f).endsWith('.log')).length, 0, 'the logs are gone');
  const parquetOnly = await read();

  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  let nonEmpty = 0;
  for (const c of cases) {
    const k = `${c.family}/${c.dataset}/${c.range[0]}`;
    const a = fromLogs.get(k)!.table;
    const specs = columnsOf(c.family, c.dataset);
    t.same(
      a.schema.fields.map((f) => f.name),
      specs.map((s) => s.name),
      `${k}: the dataset's columns`,
    );
    t.equal(plain(a), plain(compacted.get(k)!.table), `${k}: the same rows before and after compaction (${a.numRows})`);
    t.equal(plain(a), plain(parquetOnly.get(k)!.table), `${k}: and after the logs are deleted`);
    t.equal(
      String(a.schema.fields.map((f) => f.type)),
      String(parquetOnly.get(k)!.table.schema.fields.map((f) => f.type)),
      `${k}: the same types`,
    );
    // DuckDB on the partitions with the same filter, against polars reading the stream as is.
    const glob = `${dir}/parquet/family=${c.family}/dataset=${c.dataset}/**/*.parquet`;
    const folder = join(dir, 'parquet', `family=${c.family}`, `dataset=${c.dataset}`);
    const hasFiles = existsSync(folder) && readdirSync(folder, { recursive: true }).some((f) => String(f).endsWith('.parquet'));
    const duck = !hasFiles
      ? []
      : ((
          await conn.runAndReadAll(`SELECT ${specs.map(duckExpr).join(', ')} FROM read_parquet('${glob}', hive_partitioning = true, filename = true, file_row_number = true)
      WHERE market_id = '${MARKETS[c.family]}' AND receive_time >= epoch_ms(${c.range[0]}) AND receive_time < epoch_ms(${c.range[1]}) ORDER BY filename, file_row_number`)
        ).getRowObjectsJS() as Record<string, unknown>[]);
    const polars =
      a.numRows === 0
        ? []
        : (pl
            .readIPCStream(parquetOnly.get(k)!.body)
            .select(...specs.map(polarsExpr))
            .toRecords() as Record<string, unknown>[]);
    t.equal(
      polars.length,
      duck.length,
      `${k}: polars reads as many rows from the stream as DuckDB selects from the files (${duck.length})`,
    );
    let bad = 0;
    duck.forEach((d, i) => {
      for (const s of specs) {
        const pv = s.kind.startsWith('list_') ? (polars[i][s.name] === null ? null : JSON.stringify(polars[i][s.name])) : polars[i][s.name];
        const dv = s.kind.startsWith('list_') && d[s.name] !== null ? JSON.stringify(JSON.parse(d[s.name] as string)) : d[s.name];
        if ((dv ?? null) !== (pv ?? null) && bad++ < 3) t.fail(`${k} row ${i} ${s.name}: DuckDB ${String(dv)} vs the stream ${String(pv)}`);
      }
    });
    t.equal(bad, 0, `${k}: every value as DuckDB reads it`);
    if (duck.length > 0) nonEmpty++;
  }
  // Not a vacuous pass: books, trades, gaps, metrics and catalogue events were all in some range.
  t.ok(nonEmpty >= 10, `${nonEmpty} of ${cases.length} cases have rows`);
  const cut = fromLogs.get(`coin/book_changes/${RANGES[0][0]}`)!.table;
  const times = receiveTimes(cut);
  const whole = receiveTimes(fromLogs.get(`coin/book_changes/${RANGES[1][0]}`)!.table);
  t.ok(
    cut.numRows > 100 && times[0] >= RANGES[0][0] && times[times.length - 1] < RANGES[0][1],
    'a range inside the day is cut to its receive times',
  );
  t.ok(whole[0] < RANGES[0][0] && whole[whole.length - 1] >= RANGES[0][1], 'which the day holds more of');
});

t.test('a range across a compacted day and a day still in its log', async (t) => {
  const dir = tmpDataDir(t);
  const days = ['2026-07-20', '2026-07-21'];
  await writeFixture(dir, { days, booksPerDay: 300, coinMarkets: 1, spanMs: DAY_MS - 10_000 });
  const { paid } = await keysFor(dir);
  const start = dayStartMs(days[1])! - 3_600_000;
  const end = dayStartMs(days[1])! + 3_600_000;
  const url = (base: string): string => rowsUrl(base, 'coin', 'book_changes', '50000', start, end);
  await compactDay(dir, days[0]);
  const mixed = await getRows(url(await serve(t, dir)), paid);
  t.equal(mixed.status, 200);
  await compactDay(dir, days[1]);
  await deleteExpiredLogs(dir, Date.now(), 0);
  const whole = await getRows(url(await serve(t, dir)), paid);
  const a = tableFromIPC(mixed.body);
  const times = receiveTimes(a);
  t.ok(times.some((x) => x < dayStartMs(days[1])!) && times.some((x) => x >= dayStartMs(days[1])!), `rows from both days (${a.numRows})`);
  t.equal(plain(a), plain(tableFromIPC(whole.body)), 'the same rows once both days are compacted and the logs deleted');
});

t.test('a part file that fails mid-stream closes the connection without the end marker', async (t) => {
  const dir = tmpDataDir(t);
  const days = ['2026-07-20', '2026-07-21'];
  await writeFixture(dir, { days, booksPerDay: 300, coinMarkets: 1, spanMs: DAY_MS - 10_000 });
  const { paid } = await keysFor(dir);
  for (const d of days) await compactDay(dir, d);
  await deleteExpiredLogs(dir, Date.now(), 0);
  // The second day's part file loses its tail before this process ever opens it (the store is shared
  // by the process): the first day's rows are sent first, then the read fails.
  const part = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${days[1]}`);
  const file = readdirSync(part).find((f) => f.endsWith('.parquet'))!;
  truncateSync(join(part, file), 100);
  const base = await serve(t, dir);
  const res = await fetch(
    rowsUrl(base, 'coin', 'book_changes', '50000', dayStartMs(days[1])! - 3_600_000, dayStartMs(days[1])! + 3_600_000),
    { headers: { authorization: `Bearer ${paid}` } },
  );
  t.equal(res.status, 200, 'the stream had started');
  const body: Buffer | Error = await res.arrayBuffer().then(
    (b) => Buffer.from(b),
    (e: unknown) => e as Error,
  );
  if (body instanceof Error) t.pass(`the body failed to read: ${body.message}`);
  else t.not(body.subarray(body.length - 8).toString('hex'), 'ffffffff00000000', `no end marker (${body.length} bytes)`);
  // The server is still there and answers the first day alone.
  const first = await getRows(rowsUrl(base, 'coin', 'book_changes', '50000', dayStartMs(days[1])! - 3_600_000, dayStartMs(days[1])!), paid);
  t.equal(first.status, 200);
  t.ok(tableFromIPC(first.body).numRows > 0, 'the first day still reads');
});

t.test('refusals: the envelope and nothing else', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { free, paid } = await keysFor(dir);
  const base = await serve(t, dir);
  const q = (rest: string): string => `${base}/v3/datasets/rows?${rest}`;
  const cases: [string, string | null, number, string, RegExp][] = [
    [
      q(`family=coin&dataset=book_snapshots&market_id=540817&start_time=${T0}&end_time=${T0 + 1000}`),
      paid,
      400,
      'invalid_parameter',
      /dataset/,
    ],
    [q(`family=coin&dataset=trades&market_id=540817&start_time=${T0}&end_time=${T0}`), paid, 400, 'invalid_parameter', /before end_time/],
    [
      q(`family=coin&dataset=trades&market_id=540817&start_time=${T0}&end_time=${T0 + 32 * DAY_MS}`),
      paid,
      400,
      'invalid_parameter',
      /31 days/,
    ],
    [q(`family=coin&dataset=trades&market_id=540817&start_time=yesterday&end_time=${T0}`), paid, 400, 'invalid_parameter', /start_time/],
    [q(`family=coin&dataset=trades&start_time=${T0}&end_time=${T0 + 1000}`), paid, 400, 'invalid_parameter', /market_id/],
    [q(`family=coin&dataset=trades&ticker=X&start_time=${T0}&end_time=${T0 + 1000}`), paid, 400, 'invalid_parameter', /ticker/],
    [q(`family=coin&dataset=trades&market_id=540817&start_time=${T0}&end_time=${T0 + 1000}&x=1`), paid, 400, 'invalid_parameter', /x/],
    [q(`family=coin&dataset=trades&market_id=nope&start_time=${T0}&end_time=${T0 + 1000}`), paid, 404, 'not_found', /nope/],
    [
      q(`family=wallet-prediction&dataset=trades&market_id=w-9001&start_time=${T0}&end_time=${T0 + 1000}`),
      free,
      403,
      'plan_required',
      /paid/,
    ],
    [q(`family=coin&dataset=trades&market_id=540817&start_time=${T0}&end_time=${T0 + 1000}`), null, 401, 'unauthorized', /key/i],
  ];
  for (const [url, key, status, code, message] of cases) {
    const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    const body = (await res.json()) as { error: { status: number; code: string; message: string } };
    t.equal(res.status, status, `${url.slice(base.length)}: ${status}`);
    t.equal(body.error.code, code);
    t.match(body.error.message, message);
  }
});
