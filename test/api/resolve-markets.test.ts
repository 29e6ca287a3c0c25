// The book routes and the replay resolve markets through one helper, so a request that names the
// same unknown coin or market is told the same thing, in the same words, on either route.

import t from 'tap';
import { tmpDataDir } from './helpers.js';
import { get, iso, seedReplay, startReplayServer, T0 } from './replay-helpers.js';

const RANGE = `start_time=${iso(T0)}&end_time=${iso(T0 + 120_000)}`;

t.test('an unknown coin or market: one 404 message on the book routes and on the replay', async (t) => {
  const dir = tmpDataDir(t);
  await seedReplay(dir);
  const s = await startReplayServer(t, dir);
  const message = async (path: string): Promise<string> => {
    const r = await get(s.base, path, s.keys.paid);
    t.equal(r.status, 404, path);
    return String(r.lines[0].error.message);
  };

  const coinRoute = await message('/v3/doge/markets/540817/snapshots');
  t.match(coinRoute, /doge/);
  t.equal(await message(`/v3/replay?family=coin&coin=doge&${RANGE}`), coinRoute, 'unknown coin: the same words');

  const marketRoute = await message('/v3/btc/markets/nope/snapshots');
  t.match(marketRoute, /nope/);
  // The replay names no coin, so its message points at the coin's list by the path's template.
  t.equal(
    await message(`/v3/replay?family=coin&market_id=nope&${RANGE}`),
    marketRoute.replace('/v3/btc/', '/v3/{coin}/'),
    'unknown market: the same words',
  );

  const tickerRoute = await message('/v3/yesno-exchange/NOPE-1/snapshots');
  t.equal(await message(`/v3/replay?family=yesno-exchange&ticker=NOPE-1&${RANGE}`), tickerRoute, 'unknown ticker: the same words');
});
