// Market ids are arbitrary text: they become one safe path segment and come back unchanged.

import t from 'tap';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeMarket, encodeMarket, isDayClosed, listMarkets, logFilePath, openWriter } from '../../src/storage/testing.js';

t.test('any market id encodes to one safe segment and decodes back', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), (id) => {
      const seg = encodeMarket(id);
      return /^[A-Za-z0-9_%-][A-Za-z0-9._%-]*$/.test(seg) && decodeMarket(seg) === id;
    }),
    { numRuns: 2000 },
  );
  for (const id of ['.', '..', '../../etc/passwd', 'a/b', 'C:\\x', '%41', 'ü', '.hidden']) {
    const seg = encodeMarket(id);
    t.notOk(seg === '.' || seg === '..' || seg.startsWith('.') || /[/\\]/.test(seg), `${JSON.stringify(id)} → ${seg}`);
    t.equal(decodeMarket(seg), id);
  }
  t.equal(encodeMarket('KXBTC15M-26MAR14-B.5'), 'KXBTC15M-26MAR14-B.5', 'ordinary ids stay readable');
  for (const bad of ['.x', '%zz', 'a b', '%41', '']) t.equal(decodeMarket(bad), null, `${JSON.stringify(bad)} is no encoded name`);
  t.throws(() => encodeMarket(''));
});

t.test('listMarkets returns the decoded ids that have logs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-paths-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ids = ['0xdeadbeef', '../escape', 'with space/and slash', 'ünïcode'];
  for (const market of ids) await (await openWriter(dir, { family: 'wallet-prediction', stream: 'metrics', market })).close();
  t.same(await listMarkets(dir, 'wallet-prediction', 'metrics'), [...ids].sort());
  t.same(await listMarkets(dir, 'coin', 'metrics'), [], 'an absent folder lists nothing');
  const p = logFilePath(dir, { family: 'coin', stream: 'books', market: '../../x' }, '2026-01-01');
  t.ok(p.startsWith(join(dir, 'logs', 'coin', 'books')) && !p.includes('/../'), 'paths never leave the data dir');
});

t.test('a day is closed once its UTC midnight has passed', async (t) => {
  t.equal(isDayClosed('2026-01-01', Date.UTC(2026, 0, 1, 23, 59, 59, 999)), false);
  t.equal(isDayClosed('2026-01-01', Date.UTC(2026, 0, 2)), true);
  t.throws(() => isDayClosed('2026-02-30', 0));
});
