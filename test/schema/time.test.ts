import t from 'tap';
import fc from 'fast-check';
import { IsoFormatter, parseTimeParam, toIso, utcDay, dayStartMs } from '../../src/schema/time.js';

t.test('parses epoch milliseconds and ISO 8601 UTC, rejects everything else', async (t) => {
  t.equal(parseTimeParam('1785067200123'), 1785067200123);
  t.equal(parseTimeParam('2026-07-26T12:00:00.123Z'), Date.UTC(2026, 6, 26, 12, 0, 0, 123));
  t.equal(parseTimeParam('2026-07-26'), Date.UTC(2026, 6, 26));
  t.equal(parseTimeParam('2026-07-26T12:00:00+00:00'), Date.UTC(2026, 6, 26, 12));
  for (const bad of ['', 'yesterday', '2026-13-01', '2026-07-26T12:00:00+02:00', '1e12', '-5', '99999999999999999']) {
    t.equal(parseTimeParam(bad), null, `rejects ${JSON.stringify(bad)}`);
  }
});

t.test('formats ISO with milliseconds and UTC days', async (t) => {
  t.equal(toIso(Date.UTC(2026, 6, 26, 12, 0, 0, 5)), '2026-07-26T12:00:00.005Z');
  t.equal(utcDay(Date.UTC(2026, 6, 26, 23, 59, 59, 999)), '2026-07-26');
  t.equal(dayStartMs('2026-07-26'), Date.UTC(2026, 6, 26));
  t.equal(dayStartMs('2026-02-30'), null);
});

t.test('IsoFormatter gives the text of toIso for every time, in any order', async (t) => {
  const f = new IsoFormatter();
  const near = fc
    .tuple(fc.integer({ min: 0, max: 4e12 }), fc.array(fc.double({ min: -120_000, max: 120_000, noNaN: true }), { maxLength: 20 }))
    .map(([base, ds]) => ds.map((d) => base + d));
  const wild = fc.array(
    fc.oneof(
      fc.double({ noNaN: true, min: -1e16, max: 1e16 }),
      fc.constantFrom(0, -0, 0.5, -0.5, 253_402_300_799_999.9, 253_402_300_800_000, 59_999.999, 60_000),
    ),
    { maxLength: 20 },
  );
  fc.assert(
    fc.property(fc.oneof(near, wild), (times) => {
      for (const ms of times) {
        let want: string;
        try {
          want = toIso(ms);
        } catch {
          continue; // beyond what Date can print: no answer to compare
        }
        if (f.format(ms) !== want) throw new Error(`${ms}: ${f.format(ms)} != ${want}`);
      }
    }),
    { numRuns: 2000 },
  );
  t.equal(f.format(Date.UTC(2026, 6, 26, 12, 0, 59, 999.75)), '2026-07-26T12:00:59.999Z');
});
