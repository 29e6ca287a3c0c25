// The canonical text of a price or size that arrived as a JSON number (a double): 15 significant
// digits, shortest, never an exponent, so binary noise such as 64.50999999999999 is stored as 64.51.

import t from 'tap';
import fc from 'fast-check';
import { doubleText } from '../../src/schema/number-text.js';
import { encodeDecimal } from '../../src/storage/testing.js';

t.test('noise of doubles is dropped; exponents are written out; -0 is 0', async (t) => {
  const cases: [number, string][] = [
    [64.50999999999999, '64.51'],
    [1024.1799999999998, '1024.18'],
    [512.1600000000001, '512.16'],
    [64.72999999999999, '64.73'],
    [0.1 + 0.2, '0.3'],
    [Math.round(0.6451 * 200_000) / 100 + 1, '1291.2'],
    [0.1e1, '1'],
    [-0, '0'],
    [0, '0'],
    [1e-9, '0.000000001'],
    [1e21, '1000000000000000000000'],
    [1.5e-7, '0.00000015'],
    [123456789012345680000, '123456789012346000000'],
    [0.5, '0.5'],
    [-2.5e-8, '-0.000000025'],
    [Number.MAX_VALUE, '17976931348623' + '2'.padEnd(295, '0')],
    [Number.MIN_VALUE, `0.${'0'.repeat(323)}494065645841247`],
  ];
  for (const [x, want] of cases) t.equal(doubleText(x), want, `${x} → ${want}`);
  t.throws(() => doubleText(NaN), RangeError);
  t.throws(() => doubleText(Infinity), RangeError);
});

t.test('any double: plain text of at most 15 significant digits that reads back as the 15-digit value', async (t) => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
      const s = doubleText(x);
      if (!/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/.test(s)) return false;
      if (Number(s) !== Number(x.toPrecision(15)) && !(x === 0 && s === '0')) return false;
      return (
        s
          .replace(/^-?0*\.?0*/, '')
          .replace(/\./, '')
          .replace(/0+$/, '').length <= 15
      );
    }),
    { numRuns: 20_000 },
  );
  // A double already 15-digit clean (what a venue means) is printed as JavaScript prints it.
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10 ** 9 }), fc.integer({ min: 0, max: 8 }), (n, k) => {
      const x = n / 10 ** k;
      return doubleText(x) === String(x) || /e/.test(String(x));
    }),
    { numRuns: 5_000 },
  );
  t.pass('properties held');
});

t.test("the emulator's sizes (Math.round(r * 200000) / 100 + 1) all fit DECIMAL(18, 8) once canonical", async (t) => {
  let noisy = 0;
  for (let i = 0; i <= 200_000; i++) {
    const x = i / 100 + 1;
    if (String(x).split('.')[1]?.length > 8) noisy++;
    encodeDecimal(doubleText(x), 8, `size ${x}`);
  }
  t.ok(noisy > 0, `${noisy} of them print with more than 8 decimals in JavaScript's own text`);
});
