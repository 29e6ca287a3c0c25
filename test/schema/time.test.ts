import t from 'tap';
import { parseTimeParam, toIso, utcDay, dayStartMs } from '../../src/schema/time.js';

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
