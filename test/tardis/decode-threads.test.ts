// The Tardis files decoded on the helper thread (src/storage/tardis/decoders.ts) are the files
// decoded on the writer's own thread, byte for byte, on a real sim day (test/helpers/sim-day.ts)
// for every coin symbol and data type, and so are the files `pmtape export tardis` wrote. A part
// file with two columns of one row group overwritten (its footer intact) makes the file fail with the file and row
// group named, and a real `serve` aborts the response mid-body (the client's read
// fails: no complete 200), logs it, and goes on serving other files.

import t from 'tap';
import { openSync, readdirSync, readFileSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Readable } from 'node:stream';
import { ParquetFile } from 'parquet-wasm';
import { recordSimDay } from '../helpers/sim-day.js';
import { runCli, tempDir } from '../selfhost/helpers.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { compactDay, deleteExpiredLogs, tardisFile, tardisMarkets, tardisSymbols, type TardisDataType } from '../../src/storage/testing.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const TYPES: TardisDataType[] = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes'];
const EXCHANGE = 'pmtape-clob';

const bytesOf = async (s: Readable): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
};

t.test('the helper thread decodes a sim day into the same files', { timeout: 1_200_000 }, async (t) => {
  const sd = await recordSimDay(t, 200);
  const markets = (await tardisMarkets(sd.dataDir, 'coin', sd.day))!;
  t.ok(markets.length > 0, `${markets.length} coin markets on ${sd.day}`);
  let files = 0,
    rows = 0;
  for (const market of markets) {
    for (const s of await tardisSymbols(sd.dataDir, 'coin', sd.day, market)) {
      for (const dataType of TYPES) {
        const req = { family: 'coin' as const, day: sd.day, market, view: s.view, dataType, exchange: EXCHANGE, symbol: s.symbol };
        const inline = await bytesOf(tardisFile(sd.dataDir, req, undefined, 'inline'));
        const worker = await bytesOf(tardisFile(sd.dataDir, req, undefined, 'worker'));
        const exported = readFileSync(join(sd.out, `${EXCHANGE}_${dataType}_${sd.day}_${s.symbol}.csv.gz`));
        if (!inline.equals(worker) || !inline.equals(exported)) {
          t.equal(gunzipSync(worker).toString(), gunzipSync(inline).toString(), `${s.symbol} ${dataType}: helper thread = this thread`);
          t.equal(gunzipSync(exported).toString(), gunzipSync(inline).toString(), `${s.symbol} ${dataType}: export = this thread`);
          t.fail(`${s.symbol} ${dataType}: the gzip bytes differ`);
        }
        files++;
        if (dataType === 'incremental_book_L2') rows += gunzipSync(inline).toString().split('\n').length - 2;
      }
    }
  }
  t.ok(files >= 8, `${files} files identical from both threads and the export`);
  t.ok(rows >= 200, `${rows} incremental_book_L2 rows among them`);
});

/**
 * Overwrites the chunks of `columns` in row group `rg` of a part file with garbage; the footer and
 * the other columns stay (row groups are written one after another, their columns in schema order).
 */
async function spoilColumns(path: string, rg: number, columns: readonly string[]): Promise<void> {
  const md = (await ParquetFile.fromFile(new Blob([readFileSync(path)]))).metadata();
  let at = 4; // after the magic 'PAR1'
  for (let i = 0; i < rg; i++) at += md.rowGroup(i).compressedSize();
  const fd = openSync(path, 'r+');
  for (const c of md.rowGroup(rg).columns()) {
    if (columns.includes(c.columnPath()[0])) writeSync(fd, Buffer.alloc(c.compressedSize(), 0xab), 0, undefined, at);
    at += c.compressedSize();
  }
  closeSync(fd);
}

t.test('a row group that cannot be decoded fails the file clearly, never a quiet or hung one', { timeout: 600_000 }, async (t) => {
  const dir = tempDir(t, 'pmtape-tardis-spoiled-');
  const day = utcDay(Date.now() - 2 * DAY_MS);
  await writeFixture(dir, { days: [day], booksPerDay: 30_000, coinMarkets: 1, bothOutcomes: true, levels: 50 });
  await compactDay(dir, day);
  await deleteExpiredLogs(dir, Date.now(), 0);
  const part = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`);
  const name = readdirSync(part).find((f) => f.endsWith('.parquet'))!;
  const md = (await ParquetFile.fromFile(new Blob([readFileSync(join(part, name))]))).metadata();
  t.ok(md.numRowGroups() >= 3, `${md.numRowGroups()} row groups`);
  const req = { family: 'coin' as const, day, market: '50000', view: { token: '50000-up' }, exchange: EXCHANGE, symbol: '50000-UP' };
  const wholeBytes = await bytesOf(tardisFile(dir, { ...req, dataType: 'incremental_book_L2' }, undefined, 'inline'));
  // Spoiled before any helper thread or server opens the file (an open file's ranges may be cached).
  await spoilColumns(join(part, name), 2, ['price', 'size']); // not token_id: the symbol is found, the body fails
  const key = (await createKey(dir, 'paid', 'spoiled')).key;
  const serve = runCli(t, ['serve', '--port', '0', '--data-dir', dir], { readyTimeoutMs: 60_000 });
  const base = await serve.ready;
  const [y, m, d] = day.split('-');
  const get = (type: string): Promise<Response> =>
    fetch(`${base}/v1/${EXCHANGE}/${type}/${y}/${m}/${d}/50000-UP.csv.gz`, { headers: { authorization: `Bearer ${key}` } });

  // (On the writer's own thread the decoder's panic is thrown outside any promise and ends the
  // process: that is why the files are decoded on the helper thread.)
  const err = await bytesOf(tardisFile(dir, { ...req, dataType: 'incremental_book_L2' }, undefined, 'worker')).then(
    () => null,
    (e: Error) => e,
  );
  t.match(err?.message, `decoding ${join(part, name)} row group 2 failed`, 'the error names the file and the row group');
  const again = await bytesOf(tardisFile(dir, { ...req, dataType: 'trades' }, undefined, 'worker'));
  t.ok(gunzipSync(again).toString().startsWith('exchange,symbol,'), 'a new helper thread decodes the next file');

  // The first row groups may be on their way before the spoiled one is reached: then the response
  // must break off (the client's read fails); before any byte, an error status or a closed socket.
  const outcome = await get('incremental_book_L2')
    .then(async (res): Promise<Buffer | string> => (res.status === 200 ? Buffer.from(await res.arrayBuffer()) : `status ${res.status}`))
    .catch((e: Error) => e);
  const seen = outcome instanceof Buffer ? `a whole 200 body of ${outcome.length} bytes` : String(outcome);
  t.notOk(outcome instanceof Buffer, `the client sees an error, not a complete file (${seen})`);
  t.ok(!(outcome instanceof Buffer) || !outcome.equals(wholeBytes), 'never the whole file');
  t.ok(outcome instanceof Error || /^status 5/.test(seen), `an aborted response or a 5xx (${seen})`);
  // The server logged it, and serves the day's other files (trades: another dataset) whole.
  const trades = await get('trades');
  t.equal(trades.status, 200, 'trades still served');
  t.ok(
    gunzipSync(Buffer.from(await trades.arrayBuffer()))
      .toString()
      .startsWith('exchange,symbol,'),
    'a whole gzip file',
  );
  t.match(serve.stdout + serve.stderr, /tardis file failed mid-stream/, 'the server logged the failure');
  t.match(serve.stdout + serve.stderr, /row group 2/, 'naming the row group');
});
