// Property test over every route: random parameters (known and unknown names, hostile values,
// oversized text) and path segments (traversal, encoded separators, huge ids). The server never
// answers 5xx, every error is the contract envelope, and the data dir is never changed.

import t from 'tap';
import fc from 'fast-check';
import { dirTree, keysFor, seedAll, testApp, testConfig, tmpDataDir } from './helpers.js';

const ROUTES = [
  '/v3/wallet-prediction/markets',
  '/v3/wallet-prediction/{id}/orderbook/latest',
  '/v3/wallet-prediction/{id}/snapshots',
  '/v3/wallet-prediction/{id}/timeseries',
  '/v3/wallet-prediction/{id}/trades',
  '/v3/partner-venue/{id}/snapshots',
  '/v3/partner-venue/markets',
  '/v3/yesno-exchange/markets',
  '/v3/yesno-exchange/{id}/snapshots',
  '/v3/yesno-exchange/{id}/orderbook/latest',
  '/v3/{coin}/markets',
  '/v3/{coin}/markets/{id}/snapshots',
  '/v3/{coin}/markets/{id}/orderbook/latest',
  '/v3/coverage',
];
const NAMES = [
  'limit',
  'cursor',
  'start_time',
  'end_time',
  'order',
  'depth',
  'include_orderbook',
  'outcome',
  'as_of',
  'clock',
  'status',
  'window',
  'coin',
  'series',
  'interval',
  'metric',
  'family',
  'market_id',
  'ticker',
  'api_key',
  '__proto__',
  'constructor',
  'a[b]',
];
const IDS = [
  'w-9001',
  '540817',
  '0xc0ffee01',
  'KXBTC15M-26JUL261215-15',
  'topic-77',
  '..',
  '%2e%2e',
  '..%2f..%2fkeys%2fkeys.json',
  '%2F',
  '.',
  'keys',
  '%00',
  'a'.repeat(3000),
  '%E2%82%AC',
  '..%5c..%5cwin.ini',
  'btc',
  'undefined',
  'null',
  '%25',
];
const COINS = ['btc', 'eth', 'bnb', 'doge', '..', '%2e%2e', 'BTC', 'x'.repeat(500), 'coverage', 'wallet-prediction'];

const value = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '-1',
    '1000',
    '1001',
    'true',
    'false',
    'asc',
    'desc',
    'raw',
    '1s',
    '1h',
    'Up',
    'Down',
    'chance',
    'source',
    '2026-07-26T12:00:00Z',
    '2026-07-26',
    '1785067200000',
    '99999999999999999999',
    'NaN',
    '1e3',
    '../../../etc/passwd',
    '%00',
    '',
    'coin',
    'wallet-prediction',
    'open',
    'resolved',
  ),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.integer().map(String),
  fc.string({ minLength: 2000, maxLength: 6000 }).map((s) => encodeURIComponent(s).slice(0, 6000)),
);

t.test('no input ever yields 5xx, always the envelope, and never changes stored data', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  await app.inject({ url: '/v3/btc/markets', headers: { authorization: `Bearer ${keys.paid}` } });
  const before = dirTree(dir);
  let served = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...ROUTES),
      fc.constantFrom(...IDS),
      fc.constantFrom(...COINS),
      fc.array(fc.tuple(fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 12 }).map(encodeURIComponent)), value), {
        maxLength: 5,
      }),
      fc.constantFrom(keys.paid, keys.free),
      async (route, id, coin, qs, key) => {
        const path = route.replace('{id}', id).replace('{coin}', coin);
        const url = `${path}${qs.length ? '?' : ''}${qs.map(([k, v]) => `${k}=${v}`).join('&')}`;
        const r = await app.inject({ url, headers: { authorization: `Bearer ${key}` } });
        if (r.statusCode >= 500) throw new Error(`${r.statusCode} for ${url.slice(0, 300)}: ${r.body.slice(0, 300)}`);
        const body = r.json();
        if (r.statusCode >= 400) {
          const e = body.error;
          if (
            !e ||
            e.status !== r.statusCode ||
            typeof e.code !== 'string' ||
            typeof e.message !== 'string' ||
            typeof e.request_id !== 'string'
          ) {
            throw new Error(`no envelope for ${url.slice(0, 300)}: ${r.body.slice(0, 300)}`);
          }
        } else {
          served++;
          if (!('data' in body)) throw new Error(`no data for ${url.slice(0, 300)}`);
        }
      },
    ),
    { numRuns: 400, seed: 20260726 },
  );
  t.ok(served > 0, `${served} of 400 random requests were served`);
  t.same(dirTree(dir), before, 'the data dir is unchanged');
});
