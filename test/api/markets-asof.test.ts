// `/markets?as_of=T` (issue 38, item 5): the catalogue as it stood at T, from the catalogue log:
// status, labels and the venue's tick size before and after a change; a market listed after T is
// not there; the newest entry without as_of; a bad or future as_of is a 400 naming it.

import t from 'tap';
import type { CoinMarket } from '../../src/schema/market.js';
import type { Observation } from '../../src/schema/observation.js';
import { coinMarket, keysFor, testApp, testConfig, tmpDataDir, writeLog, T0 } from './helpers.js';

const listed: CoinMarket = { ...coinMarket, native: { ...(coinMarket.native as object), orderPriceMinTickSize: 0.01 } };
const changed: CoinMarket = {
  ...listed,
  status: 'closed',
  outcomes: [
    { label: 'Yes', token_id: '1111' },
    { label: 'No', token_id: '2222' },
  ],
  native: { ...(listed.native as object), orderPriceMinTickSize: 0.001 },
};
const later: CoinMarket = { ...coinMarket, market_id: '540999', condition_id: '0xc0ffee99', slug: 'btc-later' };
const ev = (m: CoinMarket, at: number, event: 'listed' | 'status', fields: string[]): Observation => ({
  type: 'catalog',
  event,
  changed: fields,
  market: m,
  recv_ts: at,
  source_ts: null,
});

t.test('markets as_of: the catalogue before and after a change', async (t) => {
  const dir = tmpDataDir(t);
  await writeLog(dir, 'coin', 'catalog', listed.market_id, [
    ev(listed, T0 - 1000, 'listed', []),
    ev(changed, T0 + 60_000, 'status', ['status', 'outcomes', 'native']),
  ]);
  await writeLog(dir, 'coin', 'catalog', later.market_id, [ev(later, T0 + 120_000, 'listed', [])]);
  const { free } = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const get = async (qs: string) => {
    const r = await app.inject({ method: 'GET', url: `/v3/btc/markets${qs}`, headers: { authorization: `Bearer ${free}` } });
    return { status: r.statusCode, body: r.json() };
  };
  const view = (b: {
    data: { market_id: string; status: string; outcomes: { label: string }[]; native: { orderPriceMinTickSize: number } }[];
  }) => b.data.map((m) => [m.market_id, m.status, m.outcomes.map((o) => o.label).join('/'), m.native.orderPriceMinTickSize]);

  t.same(
    view((await get(`?as_of=${T0}`)).body),
    [['540817', 'open', 'Up/Down', 0.01]],
    'before the change: open, its labels and tick size then; the later market not yet listed',
  );
  t.same(
    view((await get(`?as_of=${new Date(T0 + 60_000).toISOString()}`)).body),
    [['540817', 'closed', 'Yes/No', 0.001]],
    'at the change instant: the new entry',
  );
  t.same(view((await get(`?as_of=${T0 + 59_999}`)).body), [['540817', 'open', 'Up/Down', 0.01]], 'a millisecond before it: the old one');
  t.same(
    view((await get(`?as_of=${T0 + 200_000}`)).body),
    [
      ['540817', 'closed', 'Yes/No', 0.001],
      ['540999', 'open', 'Up/Down', undefined],
    ],
    'after both',
  );
  t.same(view((await get('')).body), view((await get(`?as_of=${T0 + 200_000}`)).body), 'without as_of: the newest catalogue');
  t.same(view((await get(`?as_of=${T0 - 5000}`)).body), [], 'before anything was listed: nothing');
  t.same(view((await get(`?as_of=${T0}&status=closed`)).body), [], 'filters apply to the entry as of T');
  const bad = await get('?as_of=yesterday');
  t.equal(bad.status, 400);
  t.match(bad.body.error, { code: 'invalid_parameter', message: /as_of/ });
  const future = await get(`?as_of=${Date.now() + 3_600_000}`);
  t.match(future.body.error, { code: 'invalid_parameter', message: /as_of.*future/ });
});
