// Issue 34 §1, the whole path under adversarial numbers: a wallet book push whose prices and sizes are
// JSON numbers (14–17 significant digits, 1e-9, 1e21, -0, 0.1e1, huge sizes, a 10,000-level book) is
// normalized, logged, compacted, served by GET /v3/datasets/rows and read by DuckDB. Every day
// compacts; a record whose canonical text does not fit DECIMAL(18, 8) is set aside whole, every other
// one is in the Parquet with its text exact; the rows route answers the same rows from the log and
// from the Parquet, and the same values as DuckDB reads from the files.

import t from 'tap';
import fc from 'fast-check';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import pl from 'nodejs-polars';
import { normalizeBookData } from '../../src/recorders/wallet/normalize.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { decodeDecimal, encodeDecimal } from '../../src/storage/parquet/decimal.js';
import { partitionDir } from '../../src/storage/parquet/manifest.js';
import { columnsOf } from '../../src/storage/parquet/datasets.js';
import type { BookSnapshot } from '../../src/schema/observation.js';
import { duckExpr, polarsExpr } from '../api/engine-text.js';
import { catalog, keysFor, testApp, testConfig, tmpDataDir, walletMarket, writeLog, T0 } from '../api/helpers.js';

const DAY = '2026-07-26';
const outcomes = walletMarket.outcomes;

/** Sizes a venue serializing doubles may send (mostly ones a DECIMAL(18, 8) holds once canonical). */
const size = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 0, max: 200_000 }).map((n) => n / 100 + 1) }, // the emulator's sizes
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.integer({ min: 10 ** 13, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 5, max: 9 }))
      .map(([n, k]) => n / 10 ** k),
  }, // 14–17 digits
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      1e-9,
      1e21,
      -0,
      0.1e1,
      64.50999999999999,
      1024.1799999999998,
      512.1600000000001,
      Number.MAX_SAFE_INTEGER,
      1e17,
      9.99999999e9,
      5e-324,
      1.7976931348623157e308,
    ),
  },
  { weight: 1, arbitrary: fc.double({ min: 0, max: 1e22, noNaN: true }) },
);
const price = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 1, max: 99 }).map((n) => n / 100) },
  { weight: 1, arbitrary: fc.constantFrom(1e-9, 0.1e1, -0, 0.30000000000000004, 0.07 + 0.0000001) },
  { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) },
);
const ladder = fc.array(fc.tuple(price, size), { maxLength: 6 });
const market = fc.array(fc.record({ bids: ladder, asks: ladder }), { minLength: 1, maxLength: 8 });

const fits = (b: BookSnapshot): boolean =>
  [...b.bids, ...b.asks].every(([p, s]) => {
    try {
      encodeDecimal(p, 8, 'p');
      encodeDecimal(s, 8, 's');
      return true;
    } catch {
      return false;
    }
  });

/** JSON with sorted keys (a record read back may list its fields in another order). */
const sorted = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x,
  );

/** DuckDB's text of a DECIMAL(18, 8) (`"64.51000000"`, `"-0.00000000"`) and its form → the stored text. */
const textOf = (duck: string, form: number): string => decodeDecimal(BigInt(duck.replace('.', '')), 8, form);

t.test('adversarial numbers: every day compacts, set-aside records are whole, API = Parquet = DuckDB', async (t) => {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  t.teardown(() => {
    conn.closeSync();
    db.closeSync();
  });
  let runs = 0;
  let setAside = 0;
  let stored = 0;
  const deep = {
    bids: Array.from({ length: 5_000 }, (_, i) => [0.5 - i * 1e-5, i / 100 + 1.0000000000000002]),
    asks: Array.from({ length: 5_000 }, (_, i) => [0.5 + i * 1e-5, (i * 7) / 100 + 1]),
  };
  await fc.assert(
    fc.asyncProperty(fc.array(market, { minLength: 1, maxLength: 3 }), async (marketsRaw) => {
      runs++;
      const raw = runs === 1 ? [[deep], ...marketsRaw] : marketsRaw; // the first run also has a 10,000-level book
      const dir = tmpDataDir(t);
      const expected = new Map<string, BookSnapshot[]>();
      for (const [m, pushes] of raw.entries()) {
        const id = String(3_000_000 + m);
        const books: BookSnapshot[] = [];
        for (const [i, p] of pushes.entries()) {
          // Through JSON, as the venue's bytes arrive.
          const data = JSON.parse(
            JSON.stringify({ marketId: id, updateTimestampMs: T0 + i * 1000, version: i + 1, bids: p.bids, asks: p.asks }),
          );
          books.push(...normalizeBookData(data, T0 + i * 1000 + 7, () => outcomes));
        }
        for (const b of books)
          for (const [px, sz] of [...b.bids, ...b.asks]) if (/e|^-/.test(px + sz)) throw new Error(`not plain decimal text: ${px} ${sz}`);
        await writeLog(dir, 'wallet-prediction', 'catalog', id, [catalog({ ...walletMarket, market_id: id }, T0 - 1000)]);
        await writeLog(dir, 'wallet-prediction', 'books', id, books);
        expected.set(id, books);
      }
      const rs = await compactDay(dir, DAY);
      if (rs.some((r) => r.status === 'failed'))
        throw new Error(`a partition failed: ${JSON.stringify(rs.filter((r) => r.status === 'failed'))}`);
      const pdir = partitionDir(dir, 'wallet-prediction', 'book_changes', DAY);
      const qfile = join(pdir, '_quarantine.jsonl');
      const aside = existsSync(qfile)
        ? readFileSync(qfile, 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
        : [];
      const glob = `${pdir}/*.parquet`;
      const specs = columnsOf('wallet-prediction', 'book_changes');
      const { paid } = await keysFor(dir);
      const app = await testApp(t, testConfig(dir));
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        for (const [id, books] of expected) {
          // Set aside: exactly the records whose text does not fit, each whole.
          const bad = books.map((b, i) => ({ b, seq: i + 1 })).filter(({ b }) => !fits(b));
          const mine = aside.filter((a) => a.market === id);
          if (JSON.stringify(mine.map((a) => a.seq)) !== JSON.stringify(bad.map((x) => x.seq)))
            throw new Error(`${id}: set aside ${mine.map((a) => a.seq).join(',')} but ${bad.map((x) => x.seq).join(',')} do not fit`);
          for (const [k, a] of mine.entries())
            if (sorted(a.record) !== sorted({ ...bad[k].b, seq: bad[k].seq }))
              throw new Error(
                `${id} seq ${a.seq}: the set-aside record differs from the one logged: ${sorted(a.record).slice(0, 300)} vs ${sorted({ ...bad[k].b, seq: bad[k].seq }).slice(0, 300)}`,
              );
          setAside += mine.length;
          // Stored: every other record (a day whose every record was set aside has no part file: issue 34 §3), its level texts exact, in order.
          const duck =
            existsSync(pdir) && readdirSync(pdir).some((f) => f.endsWith('.parquet'))
              ? ((
                  await conn.runAndReadAll(
                    `SELECT ${specs.map(duckExpr).join(', ')} FROM read_parquet('${glob}', filename = true, file_row_number = true) WHERE market_id = '${id}' ORDER BY filename, file_row_number`,
                  )
                ).getRowObjectsJS() as Record<string, string | null>[])
              : [];
          const want: string[] = [];
          for (const [i, b] of books.entries()) {
            if (!fits(b)) continue;
            stored++;
            for (const [side, l] of [
              ['bid', b.bids],
              ['ask', b.asks],
            ] as const) {
              if (l.length === 0) want.push(`${i + 1} ${side} null null`);
              for (const [px, sz] of l) want.push(`${i + 1} ${side} ${px} ${sz}`);
            }
          }
          const got = duck.map(
            (r) =>
              `${r.seq} ${r.side} ${r.price === null ? 'null' : textOf(r.price, Number(r.price_decimals))} ${r.size === null ? 'null' : textOf(r.size, Number(r.size_decimals))}`,
          );
          if (got.join('\n') !== want.join('\n'))
            throw new Error(
              `${id}: the Parquet's levels differ from the normalized text (${got.length} vs ${want.length} rows; first ${got.find((g, k) => g !== want[k])} vs ${want.find((w, k) => w !== got[k])})`,
            );
          // The rows route (from the Parquet now) = DuckDB, value for value.
          const res = await fetch(
            `${base}/v3/datasets/rows?family=wallet-prediction&dataset=book_changes&market_id=${id}&start_time=${T0 - 60_000}&end_time=${T0 + 3_600_000}`,
            { headers: { authorization: `Bearer ${paid}` } },
          );
          if (res.status !== 200) throw new Error(`${id}: rows route answered ${res.status}: ${await res.text()}`);
          const body = Buffer.from(await res.arrayBuffer());
          const polars =
            duck.length === 0
              ? []
              : (pl
                  .readIPCStream(body)
                  .select(...specs.map(polarsExpr))
                  .toRecords() as Record<string, unknown>[]);
          if (polars.length !== duck.length) throw new Error(`${id}: rows route ${polars.length} rows, DuckDB ${duck.length}`);
          duck.forEach((d, k) => {
            for (const s of specs)
              if ((d[s.name] ?? null) !== (polars[k][s.name] ?? null))
                throw new Error(`${id} row ${k} ${s.name}: DuckDB ${d[s.name]} vs the rows route ${String(polars[k][s.name])}`);
          });
        }
      } finally {
        await app.close();
      }
    }),
    { numRuns: 6, seed: 34, endOnFailure: true },
  );
  t.ok(runs >= 6, `${runs} days, each compacted`);
  t.ok(setAside > 0 && stored > 10, `records set aside (${setAside}) and records stored (${stored})`);
});
