// Exact decimals: venue text ↔ DECIMAL(18, s) plus its text form, and a value that cannot be stored
// exactly sets its record aside (the partition's _quarantine.jsonl) with market, seq and value.

import t from 'tap';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeDecimal, encodeDecimal, parseDecimal } from '../../src/storage/parquet/decimal.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { openWriter } from '../../src/storage/index.js';
import { logFilePath } from '../../src/storage/paths.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';

t.test('every plain decimal text comes back as the same text', async (t) => {
  const cases: [string, number][] = [
    ['0.30', 8],
    ['.48', 8],
    ['0.5200', 4],
    ['120.00', 2],
    ['52', 4],
    ['0', 8],
    ['999999999.99999999', 8],
    ['1234567890123456.78', 2],
    ['0.00000001', 8],
  ];
  for (const [text, scale] of cases) {
    const e = encodeDecimal(text, scale, 'm');
    t.equal(decodeDecimal(e.unscaled, scale, e.form), text, `${text} at scale ${scale}`);
    t.equal(Number(e.unscaled) / 10 ** scale, Number(text), `${text} keeps its value`);
  }
  t.equal(typeof encodeDecimal('1234567890123456.78', 2, 'm').unscaled, 'bigint', 'beyond 2^53 the unscaled value is a bigint');
});

t.test('the fast path agrees with the general parser on every text, accepted or refused', async (t) => {
  // Seeded, so a failure names a text that reproduces: digits, points and a few other characters.
  let x = 12345;
  const rnd = (n: number): number => (x = (x * 1103515245 + 12345) % 2147483648) % n;
  const alphabet = '0123456789012345678901234567890..-e ';
  let compared = 0;
  for (let k = 0; k < 20000; k++) {
    let text = '';
    for (let n = rnd(21); n > 0; n--) text += alphabet[rnd(alphabet.length)];
    const scale = [0, 2, 4, 6, 8, 12, 14][rnd(7)];
    const run = (f: () => unknown): unknown => {
      try {
        return f();
      } catch (e) {
        return `refused: ${(e as Error).message}`;
      }
    };
    const fast = run(() => encodeDecimal(text, scale, 'm'));
    const general = run(() => parseDecimal(text, scale, 'm'));
    if (
      JSON.stringify(fast, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)) !==
      JSON.stringify(general, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))
    ) {
      t.fail(`${JSON.stringify(text)} at scale ${scale}: ${String(JSON.stringify(fast))} vs ${String(JSON.stringify(general))}`);
      return;
    }
    compared++;
  }
  t.equal(compared, 20000, '20,000 random texts: the same value and form, or the same refusal');
  // And every accepted text comes back as itself (the fast decoder below 10^15, BigInt above).
  let back = 0;
  for (let k = 0; k < 20000; k++) {
    const scale = [0, 2, 4, 8, 12][rnd(5)];
    const int = rnd(3) === 0 ? '' : String(rnd(10 ** rnd(8)));
    const frac =
      scale && rnd(4)
        ? String(rnd(10 ** scale))
            .padStart(scale, '0')
            .slice(0, 1 + rnd(scale))
        : '';
    const text = int === '' && frac === '' ? '0' : frac ? `${int}.${frac}` : int;
    const e = encodeDecimal(text, scale, 'm');
    if (decodeDecimal(e.unscaled, scale, e.form) !== text) {
      t.fail(`${text} at scale ${scale} came back as ${decodeDecimal(e.unscaled, scale, e.form)}`);
      return;
    }
    back++;
  }
  t.equal(back, 20000, '20,000 random decimals come back as the same text');
  t.equal(decodeDecimal(999999999999999, 2, 2), '9999999999999.99', 'the largest fast-path value');
  t.equal(decodeDecimal(1000000000000001, 2, 2), '10000000000000.01', 'past it, the general path');
  t.same(encodeDecimal('0.52', 4, 'm'), { unscaled: 5200, form: 2 }, 'scaled up exactly');
  t.same(encodeDecimal('.5', 8, 'm'), { unscaled: 50000000, form: 1 + 64 }, 'no leading zero is kept in the form');
});

t.test('text that cannot be stored exactly is refused with where and what', async (t) => {
  for (const bad of ['1e-7', '-0.5', '+1', '5.', '', '.', '00.5', ' 1', '0x10', 'NaN']) {
    let msg = '';
    try {
      encodeDecimal(bad, 8, 'market 540817 seq 12 price');
    } catch (e) {
      msg = (e as Error).message;
    }
    t.equal(msg.split(' is not')[0], `market 540817 seq 12 price: value ${JSON.stringify(bad)}`, `"${bad}" refused: ${msg}`);
  }
  t.throws(() => encodeDecimal('0.123456789', 8, 'm'), /has 9 decimals, more than DECIMAL\(18, 8\) holds/);
  t.throws(() => encodeDecimal('10000000000000000.00', 2, 'm'), /does not fit DECIMAL\(18, 2\)/);
});

t.test("compaction sets an inexact value's record aside, naming market, seq and value, and publishes the rest", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-decimal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = utcDay(Date.now() - 2 * DAY_MS);
  const t0 = dayStartMs(day)! + 1000;
  const w = await openWriter(dir, { family: 'coin', stream: 'books', market: '540817' });
  await w.append({
    type: 'book',
    recv_ts: t0,
    source_ts: null,
    token_id: 'up',
    units: 'decimal',
    bids: [['0.48', '10']],
    asks: [['0.52', '5']],
  });
  await w.append({
    type: 'book_delta',
    recv_ts: t0 + 1,
    source_ts: null,
    token_id: 'up',
    changes: [{ side: 'bid', price: '0.47', size: '1e-7' }],
  });
  await w.close();
  const log = logFilePath(dir, { family: 'coin', stream: 'books', market: '540817' }, day);
  const before = (await stat(log)).size;
  const rs = await compactDay(dir, day);
  const bc = rs.find((r) => r.family === 'coin' && r.dataset === 'book_changes')!;
  t.equal(bc.status, 'written', 'the good record is published');
  t.equal(bc.rows, 2, 'its two level rows');
  t.equal(bc.quarantined, 1, 'the other is set aside');
  t.equal((await stat(log)).size, before, 'the log is untouched');
  const part = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${day}`);
  const line = JSON.parse((await readFile(join(part, '_quarantine.jsonl'), 'utf8')).trim());
  t.match(line.reason, /market 540817 seq 2 size: value "1e-7" is not a plain unsigned decimal/);
  t.same(line.record.changes, [{ side: 'bid', price: '0.47', size: '1e-7' }], 'kept exactly');
  t.same(
    (await readdir(join(dir, '_parquet-staging'))).filter((n) => n !== '.lock'),
    [],
    'no staging leftovers',
  );
});
