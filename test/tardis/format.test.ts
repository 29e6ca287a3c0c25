// The Tardis-format route on a compacted day (seedAll's markets, logs deleted): the header and
// columns of each data type, books rebuilt from `incremental_book_L2` by Tardis's rule equal the
// API's `as_of` at several instants (coin across a gap, wallet, both views of a yes/no book), every
// `book_snapshot_25` and `quotes` row is the rebuilt book at its time, trades are the recorded
// trades, `pmtape export tardis` writes the same bytes under the clients' file names, and garbage
// paths are 4xx naming what is wrong.

import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { bookRecords, T0, testApp, testConfig, tmpDataDir } from '../api/helpers.js';
import { asOfBooks, CLI, compactedDay, DAY, INSTANTS, parseCsv, rebuild, run, type CsvFile } from './helpers.js';

const PATH = '/v1/pmtape-clob/incremental_book_L2/2026/07/26';

t.test('Tardis-format files of a compacted day', async (t) => {
  const dir = tmpDataDir(t);
  const keys = await compactedDay(dir);
  const app = await testApp(t, testConfig(dir));
  const fetchRaw = async (url: string, key: string | null = keys.paid) =>
    app.inject({ url, headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  const file = async (exchange: string, type: string, symbol: string): Promise<{ bytes: Buffer; csv: CsvFile }> => {
    const r = await fetchRaw(`/v1/${exchange}/${type}/2026/07/26/${symbol}.csv.gz`);
    t.equal(r.statusCode, 200, `${exchange} ${type} ${symbol}: ${r.statusCode} ${r.statusCode === 200 ? '' : r.body}`);
    t.equal(r.headers['content-type'], 'application/gzip');
    t.notOk(r.headers['content-encoding'], 'the body is the .csv.gz file itself, not an encoded CSV');
    return { bytes: r.rawPayload, csv: parseCsv(gunzipSync(r.rawPayload).toString('utf8')) };
  };
  const SYMBOLS: [string, string][] = [
    ['pmtape-clob', '540817-UP'],
    ['pmtape-clob', '540817-DOWN'],
    ['pmtape-wallet', 'W-9001-UP'],
    ['pmtape-yesno', 'KXBTC15M-26JUL261215-15-YES'],
    ['pmtape-yesno', 'KXBTC15M-26JUL261215-15-NO'],
  ];
  const l2 = new Map<string, CsvFile>();
  for (const [ex, sym] of SYMBOLS) l2.set(sym, (await file(ex, 'incremental_book_L2', sym)).csv);

  t.test('incremental_book_L2: columns, units and the is_snapshot convention', async (t) => {
    const f = l2.get('540817-UP')!;
    t.equal(f.header, 'exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount');
    t.ok(f.rows.length > 100, `${f.rows.length} rows`);
    for (const r of f.rows) {
      t.equal(r.length, 8);
      t.equal(r[0], 'pmtape-clob');
      t.equal(r[1], '540817-UP');
      t.match(r[2], /^\d{16}$/, 'timestamp in µs');
      t.match(r[3], /^\d{16}$/, 'local_timestamp in µs');
      t.ok(['true', 'false'].includes(r[4]) && ['bid', 'ask'].includes(r[5]));
      t.match(r[6], /^(0|[1-9]\d*)(\.\d*[1-9])?$/, 'price as a plain decimal');
      if (t.passing() === false) break;
    }
    const first = f.rows[0];
    t.equal(Number(first[3]), T0 * 1000, 'local_timestamp is the receive time');
    t.equal(Number(first[2]), (T0 - 5) * 1000, 'timestamp is the venue time');
    t.equal(first[4], 'true', 'the day opens on a snapshot');
    const locals = f.rows.map((r) => Number(r[3]));
    t.ok(
      locals.every((x, i) => i === 0 || x >= locals[i - 1]),
      'ordered by local_timestamp',
    );
    // After the gap (40-50 s) the venue's new full book is a snapshot again: the reader resets there.
    const resets = f.rows
      .filter((r, i) => r[4] === 'true' && (i === 0 || f.rows[i - 1][4] === 'false'))
      .map((r) => Number(r[3]) / 1000 - T0);
    t.same(resets, [0, 50_000], "snapshots at the day's start and after the gap");
  });

  t.test("books rebuilt by the Tardis rule equal the API's as_of", async (t) => {
    let compared = 0;
    for (const T of INSTANTS) {
      const want = await asOfBooks(app, keys.paid, T);
      if (want === null) continue; // inside the gap the API says stale
      for (const [sym, book] of want) {
        t.same(rebuild(l2.get(sym)!, T * 1000), book, `${sym} at ${new Date(T).toISOString()}`);
        compared++;
      }
    }
    t.ok(compared >= 30, `${compared} books compared`);
  });

  t.test('book_snapshot_25 and quotes rows are the rebuilt book at their time', async (t) => {
    for (const [ex, sym] of SYMBOLS) {
      const snaps = (await file(ex, 'book_snapshot_25', sym)).csv;
      const quotes = (await file(ex, 'quotes', sym)).csv;
      t.equal(snaps.header.split(',').length, 4 + 100);
      t.match(
        snaps.header,
        /^exchange,symbol,timestamp,local_timestamp,asks\[0\]\.price,asks\[0\]\.amount,bids\[0\]\.price,bids\[0\]\.amount,asks\[1\]\.price,/,
      );
      t.equal(quotes.header, 'exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount');
      const cell = (x: number | undefined): string => (x === undefined ? '' : String(x));
      let bad = 0;
      for (const r of snaps.rows) {
        const b = rebuild(l2.get(sym)!, Number(r[3]));
        const cells: string[] = [];
        for (let i = 0; i < 25; i++) cells.push(cell(b.asks[i]?.[0]), cell(b.asks[i]?.[1]), cell(b.bids[i]?.[0]), cell(b.bids[i]?.[1]));
        if (r.slice(4).join(',') !== cells.join(',') && bad++ < 3)
          t.fail(`${sym} snapshot at ${r[3]}: ${r.slice(4, 12).join(',')} vs ${cells.slice(0, 8).join(',')}`);
      }
      for (const r of quotes.rows) {
        const b = rebuild(l2.get(sym)!, Number(r[3]));
        const want = [cell(b.asks[0]?.[1]), cell(b.asks[0]?.[0]), cell(b.bids[0]?.[0]), cell(b.bids[0]?.[1])].join(',');
        if (r.slice(4).join(',') !== want && bad++ < 3) t.fail(`${sym} quote at ${r[3]}: ${r.slice(4).join(',')} vs ${want}`);
      }
      t.equal(bad, 0, `${sym}: ${snaps.rows.length} snapshots and ${quotes.rows.length} quotes match the book`);
      t.ok(snaps.rows.length > 10 && quotes.rows.length > 5);
    }
  });

  t.test('trades are the recorded trades of the outcome token', async (t) => {
    const recs = bookRecords(['1111', '2222'], {
      start: T0,
      n: 400,
      stepMs: 250,
      cpEvery: 50,
      gapAt: T0 + 40_000,
      gapMs: 10_000,
      trades: true,
    });
    for (const [tok, sym] of [
      ['1111', '540817-UP'],
      ['2222', '540817-DOWN'],
    ]) {
      const f = (await file('pmtape-clob', 'trades', sym)).csv;
      t.equal(f.header, 'exchange,symbol,timestamp,local_timestamp,id,side,price,amount');
      const want = recs
        .filter((r) => r.type === 'trade' && r.token_id === tok)
        .map((r) => [String(r.source_ts! * 1000), String(r.recv_ts * 1000), 'buy', '0.51', '10']);
      t.ok(want.length > 0);
      t.same(
        f.rows.map((r) => [r[2], r[3], r[5], r[6], r[7]]),
        want,
        `${sym}: every trade, in order`,
      );
      t.equal(new Set(f.rows.map((r) => r[4])).size, f.rows.length, 'trade ids are unique');
    }
  });

  t.test("`pmtape export tardis` writes the same bytes under the clients' file names", async (t) => {
    const out = mkdtempSync(join(tmpdir(), 'pmtape-tardis-export-'));
    t.teardown(() => rmSync(out, { recursive: true, force: true }));
    await run(process.execPath, [CLI, 'export', 'tardis', '--date', DAY, '--out', out, '--data-dir', dir], {
      env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn' },
    });
    const names = readdirSync(out).sort();
    t.equal(names.length, SYMBOLS.length * 4, 'four data types per symbol');
    t.notOk(
      names.some((n) => n.endsWith('.partial')),
      'no partial file left',
    );
    for (const [ex, sym] of SYMBOLS) {
      for (const type of ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes']) {
        const name = `${ex}_${type}_${DAY}_${sym}.csv.gz`;
        t.ok(names.includes(name), name);
        t.ok(readFileSync(join(out, name)).equals((await file(ex, type, sym)).bytes), `${name}: the route's bytes`);
      }
    }
    const bad = await run(process.execPath, [CLI, 'export', 'tardis', '--date', '2026-07-27', '--out', out, '--data-dir', dir]).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    t.equal(bad?.code, 2, 'a day not compacted is refused');
    t.match(bad?.stderr, /2026-07-27 is not compacted .*pmtape compact --date 2026-07-27/);
  });

  t.test('garbage and edge paths are 4xx naming what is wrong', async (t) => {
    const cases: [string, string | null, number, RegExp][] = [
      [`${PATH}/540817-UP.csv.gz`, null, 401, /key/i],
      [`${PATH}/540817-UP.csv.gz`, 'not-a-key', 401, /key/i],
      ['/v1/binance/incremental_book_L2/2026/07/26/540817-UP.csv.gz', keys.paid, 404, /Unknown exchange 'binance'.*pmtape-clob/],
      ['/v1/pmtape-clob/book_ticker/2026/07/26/540817-UP.csv.gz', keys.paid, 400, /data_type.*incremental_book_L2/],
      ['/v1/pmtape-clob/trades/2026/13/26/540817-UP.csv.gz', keys.paid, 400, /date/],
      ['/v1/pmtape-clob/trades/26/07/26/540817-UP.csv.gz', keys.paid, 400, /date/],
      ['/v1/pmtape-clob/trades/2026/07/27/540817-UP.csv.gz', keys.paid, 404, /2026-07-27 is not compacted/],
      [`${PATH}/540817-MAYBE.csv.gz`, keys.paid, 404, /No symbol '540817-MAYBE'/],
      [`${PATH}/540817-UP.csv`, keys.paid, 400, /symbol/],
      [`${PATH}/..%2F..%2F..%2Fetc%2Fpasswd.csv.gz`, keys.paid, 400, /symbol/],
      [`${PATH}/..csv.gz`, keys.paid, 400, /symbol/],
      [`${PATH}/${'A'.repeat(300)}.csv.gz`, keys.paid, 400, /'file' must NOT have more than 256/],
      ['/v1/pmtape-wallet/trades/2026/07/26/W-9001-UP.csv.gz', keys.free, 403, /paid plan/],
    ];
    for (const [url, key, status, msg] of cases) {
      const r = await fetchRaw(url, key);
      t.equal(r.statusCode, status, `${url} → ${status} (${r.body.slice(0, 200)})`);
      t.match(r.json().error?.message ?? r.body, msg);
    }
    // Any case of the symbol names it (the clients capitalize the symbols they are given).
    const lower = await fetchRaw(`${PATH}/540817-up.csv.gz`);
    t.equal(lower.statusCode, 200);
    t.ok(lower.rawPayload.equals((await file('pmtape-clob', 'incremental_book_L2', '540817-UP')).bytes));
  });
});
