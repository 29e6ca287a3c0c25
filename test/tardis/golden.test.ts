// The Tardis files are the same bytes as before the writer wrote numbers straight into its buffer
// (issue 38's speed work): every symbol and data type of two compacted days, gunzipped, against the
// digests (and row counts) that the string-building writer of 2026-11-27 produced for them
// (test/fixtures/tardis/golden-files.json). The days: seedAll's coin, wallet and yes/no markets (both yes/no views), and
// a fixture coin market with both outcome books, 50 levels a side at a 0.001 tick and checkpoints
// (full books after full books, written as their difference). A change of the files' text is a
// change of the format: make it on purpose, then regenerate the digests with this test's output.

import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { Readable } from 'node:stream';
import { DESCRIPTORS } from '../../src/families/registry.js';
import { compactDay, deleteExpiredLogs, tardisFile, tardisMarkets, tardisSymbols, type TardisDataType } from '../../src/storage/testing.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';
import { tmpDataDir } from '../api/helpers.js';
import { compactedDay, DAY } from './helpers.js';

const TYPES: TardisDataType[] = ['incremental_book_L2', 'trades', 'book_snapshot_25', 'quotes'];
const GOLDEN = JSON.parse(readFileSync(new URL('../../../test/fixtures/tardis/golden-files.json', import.meta.url), 'utf8')) as Record<
  string,
  string
>;

const bytesOf = async (s: Readable): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
};

/** `<day> <exchange> <data_type> <symbol>` → `<rows> <sha256 of the gunzipped file>`, for every file of the day. */
async function digests(dir: string, day: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const d of DESCRIPTORS) {
    for (const market of (await tardisMarkets(dir, d.family, day)) ?? []) {
      for (const s of await tardisSymbols(dir, d.family, day, market)) {
        for (const dataType of TYPES) {
          const req = { family: d.family, day, market, view: s.view, dataType, exchange: d.tardisExchange, symbol: s.symbol };
          const text = gunzipSync(await bytesOf(tardisFile(dir, req, undefined, 'inline')));
          let rows = -1; // the header
          for (const b of text) if (b === 10) rows++;
          out[`${day} ${d.tardisExchange} ${dataType} ${s.symbol}`] = `${rows} ${createHash('sha256').update(text).digest('hex')}`;
        }
      }
    }
  }
  return out;
}

t.test('every file of two compacted days is byte for byte the golden one', { timeout: 600_000 }, async (t) => {
  const a = tmpDataDir(t);
  await compactedDay(a);
  const b = tmpDataDir(t);
  const day = '2026-07-20';
  await writeFixture(b, { days: [day], booksPerDay: 3000, coinMarkets: 1, bothOutcomes: true, levels: 50, spanMs: 6 * 3_600_000 });
  await compactDay(b, day);
  await deleteExpiredLogs(b, Date.now(), 0);
  const got = { ...(await digests(a, DAY)), ...(await digests(b, day)) };
  t.same(Object.keys(got).sort(), Object.keys(GOLDEN).sort(), 'the same files (symbols and data types)');
  for (const [k, v] of Object.entries(GOLDEN)) t.equal(got[k], v, k);
  const rows = Object.values(got).reduce((n, v) => n + Number(v.split(' ')[0]), 0);
  t.ok(rows > 10_000, `${rows} rows compared`);
});
