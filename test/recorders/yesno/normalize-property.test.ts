import t from 'tap';
import fc from 'fast-check';
import { normalizeOrderbook, normalizeMarket, MAX_LEVELS } from '../../../src/recorders/yesno/normalize.js';
import { normalizeFrame, normalizeMetrics, normalizeWalletMarket, normalizeRestBook } from '../../../src/recorders/wallet/normalize.js';

const outcomesOf = () => [
  { label: 'Up', token_id: '1' },
  { label: 'Down', token_id: '2' },
];

// fc.assert throws with the shrunk counter-example when a property fails; t.doesNotThrow turns that
// into a tap assertion carrying it.
t.test('no input makes either normalizer throw', async (t) => {
  let runs = 0;
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.anything(), (raw) => {
          normalizeOrderbook(raw, 1);
          normalizeOrderbook({ orderbook_fp: raw }, 1);
          normalizeOrderbook({ orderbook: { yes: raw, no: raw } }, 1);
          normalizeMarket(raw);
          normalizeFrame(raw, 1, outcomesOf);
          normalizeFrame({ type: 'M', topic: 'predictOrderbook/1', data: raw }, 1, outcomesOf);
          normalizeRestBook({ success: true, data: raw }, 1, outcomesOf);
          normalizeMetrics({ success: true, data: raw }, 1, outcomesOf);
          normalizeWalletMarket(raw, raw);
          runs++;
        }),
        { numRuns: 500 },
      ),
    'yes/no and wallet normalizers return for any value',
  );
  t.ok(runs >= 500, `${runs} inputs tried`);
});

t.test('any valid cents ladder comes out best first, same levels, text unchanged, at most 100', async (t) => {
  const level = fc.tuple(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 0, max: 1_000_000 }));
  t.doesNotThrow(
    () =>
      fc.assert(
        fc.property(fc.array(level, { maxLength: 150 }), fc.array(level, { maxLength: 20 }), (yes, no) => {
          const [b] = normalizeOrderbook({ orderbook: { yes, no } }, 1);
          const expect = yes
            .map(([p, s]) => [String(p), String(s)])
            .sort((a, c) => Number(c[0]) - Number(a[0]))
            .slice(0, MAX_LEVELS);
          if (b.units !== 'cents') return false;
          if (b.yes.length !== Math.min(yes.length, MAX_LEVELS)) return false;
          for (let i = 1; i < b.yes.length; i++) if (Number(b.yes[i - 1][0]) < Number(b.yes[i][0])) return false;
          return JSON.stringify(b.yes.map((l) => l[0])) === JSON.stringify(expect.map((l) => l[0])) && b.no.length === no.length;
        }),
        { numRuns: 300 },
      ),
    'every generated ladder keeps the property',
  );
  // One worked case, so the property's reading of the output is itself checked.
  const [b] = normalizeOrderbook(
    {
      orderbook: {
        yes: [
          [40, 10],
          [55, 3],
        ],
        no: [[20, 7]],
      },
    },
    1,
  );
  t.same(
    b.yes,
    [
      ['55', '3'],
      ['40', '10'],
    ],
    'best (highest) yes bid first, text as sent',
  );
  t.same(b.no, [['20', '7']]);
});
