// Hostile input to `/v3/replay`: random parameters (known and unknown names, odd ids, types, times,
// tokens, oversized text) never give 5xx; an error is the envelope before any line, and a stream
// always ends with its end line. Nothing in the data dir changes.

import t from 'tap';
import fc from 'fast-check';
import { dirTree, keysFor, seedAll, testApp, testConfig, tmpDataDir, T0 } from './helpers.js';

const NAMES = [
  'family',
  'market_id',
  'ticker',
  'coin',
  'window',
  'start_time',
  'end_time',
  'types',
  'depth',
  'after',
  'limit',
  '__proto__',
];
const token = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
const value = fc.oneof(
  fc.constantFrom(
    'coin',
    'wallet-prediction',
    'yesno-exchange',
    '540817',
    '540817,540817',
    'w-9001',
    'KXBTC15M-26JUL261215-15',
    'btc',
    '15m',
    String(T0),
    String(T0 + 30_000),
    '2026-07-26T12:00:00Z',
    'book',
    'book,book_change,trade,gap',
    'book_snapshot_25_1s',
    'book_snapshot_0_1s',
    'book_snapshot_99999_1s',
    'metric',
    ',,,',
    '0',
    '-1',
    '1001',
    'NaN',
    '%00',
    '..%2f..',
    '',
    token([T0 + 5000, '540817', 10, 'book']),
    token([T0, 1, 2, 3]),
    token({}),
    token([1e300, '', 0, '']),
    'e30',
  ),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.string({ minLength: 1000, maxLength: 9000 }).map((s) => encodeURIComponent(s).slice(0, 9000)),
);

t.test('no input yields 5xx; errors are envelopes; streams end with their end line', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const before = dirTree(dir);
  let streams = 0;
  // Mostly well-formed at the core (so streams happen), with random and hostile parameters on top.
  const core = fc.record(
    {
      family: fc.option(fc.constantFrom('coin', 'wallet-prediction', 'yesno-exchange'), { freq: 5 }),
      start_time: fc.option(fc.constantFrom(String(T0), String(T0 + 30_000), '2026-07-26T12:00:00Z'), { freq: 5 }),
      market_id: fc.option(fc.constantFrom('540817', 'w-9001', '540817,540817'), { freq: 2 }),
      ticker: fc.option(fc.constantFrom('KXBTC15M-26JUL261215-15'), { freq: 2 }),
      end_time: fc.option(fc.constantFrom(String(T0 + 60_000), String(T0 + 3_600_000)), { freq: 2 }),
    },
    { requiredKeys: [] },
  );
  await fc.assert(
    fc.asyncProperty(
      core,
      fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom(...NAMES), value, { maxKeys: 3 })),
      fc.boolean(),
      async (base, extra, paid) => {
        const params = { ...Object.fromEntries(Object.entries(base).filter(([, v]) => v !== null && v !== undefined)), ...extra };
        const qs = Object.entries(params)
          .map(([k, v]) => `${k}=${v}`)
          .join('&');
        const r = await app.inject({
          method: 'GET',
          url: `/v3/replay?${qs}`,
          headers: { authorization: `Bearer ${paid ? keys.paid : keys.free}` },
        });
        if (r.statusCode >= 500) throw new Error(`${r.statusCode} for ${qs.slice(0, 300)}: ${r.body.slice(0, 300)}`);
        if (r.statusCode !== 200) {
          const e = r.json().error;
          if (!e || e.status !== r.statusCode || typeof e.code !== 'string' || typeof e.request_id !== 'string')
            throw new Error(`not an envelope: ${r.body.slice(0, 300)}`);
          return;
        }
        streams++;
        const last = JSON.parse(r.body.trim().split('\n').pop()!);
        if (last.type !== 'end' || typeof last.next !== 'string')
          throw new Error(`stream without its end line for ${qs.slice(0, 300)}: ${r.body.slice(-300)}`);
      },
    ),
    {
      numRuns: 300,
      // Well-formed requests of every family run first, every time: random extras break most requests
      // (7 – 22 of 300 streamed without these), so a threshold on the random ones alone failed now and
      // then (5 of 300 once). These make sure streams are always among the inputs checked.
      examples: [
        [{ family: 'coin', market_id: '540817', start_time: String(T0) }, {}, false],
        [{ family: 'coin', market_id: '540817,540817', start_time: String(T0), end_time: String(T0 + 60_000) }, {}, true],
        [{ family: 'coin', start_time: '2026-07-26T12:00:00Z' }, { coin: 'btc' }, false],
        [{ family: 'coin', market_id: '540817', start_time: String(T0) }, { types: 'book,book_change,trade,gap' }, false],
        [{ family: 'coin', market_id: '540817', start_time: String(T0) }, { types: 'book_snapshot_25_1s' }, true],
        [{ family: 'wallet-prediction', market_id: 'w-9001', start_time: String(T0), end_time: String(T0 + 3_600_000) }, {}, true],
        [{ family: 'wallet-prediction', market_id: 'w-9001', start_time: String(T0) }, { types: 'metric' }, true],
        [{ family: 'yesno-exchange', ticker: 'KXBTC15M-26JUL261215-15', start_time: String(T0) }, {}, false],
      ],
    },
  );
  t.ok(streams >= 8, `${streams} of 300 requests streamed (the 8 examples first, then random ones)`);
  t.same(
    dirTree(dir).filter((f) => !f.includes('/api/')),
    before.filter((f) => !f.includes('/api/')),
    'the data dir is unchanged',
  );
});
