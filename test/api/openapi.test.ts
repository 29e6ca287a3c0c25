// The OpenAPI document of a running `serve` (GET /docs/json) must stay usable by the tools people
// point at it: a real validator (@apidevtools/swagger-parser) accepts it, every route of the contract
// (API.md §2-8) is in it with its parameters and the error envelope of §2, and a client generated
// from it (openapi-typescript types + openapi-fetch) compiles under the project's own `tsc` against a
// small usage file, which then runs against the same server. Issue 40: /healthz's empty querystring
// came out as two parameters named `type` and `additionalProperties`, and the document was invalid.

import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFile } from 'node:child_process';
import Fastify from 'fastify';
import SwaggerParser from '@apidevtools/swagger-parser';
import openapiTS from 'openapi-typescript';
import openapiPlugin from '../../src/api/plugins/openapi.js';
import { serverOptions } from '../../src/api/app.js';
import errorHandler from '../../src/api/plugins/error-handler.js';
import { createKey } from '../../src/api/plugins/keys.js';
import { coinMarket, seedAll, tmpDataDir } from './helpers.js';
import { REPO, runCli } from '../selfhost/helpers.js';

type Doc = { paths: Record<string, Record<string, any>>; security?: unknown[] };

/** Every route of API.md §2-8 with the parameters the contract names for it (the document may have more). */
const CONTRACT: [string, string[]][] = [
  ['/healthz', []],
  ['/metrics', []],
  ...['wallet-prediction', 'partner-venue'].flatMap((p): [string, string[]][] => [
    [`/v3/${p}/markets`, ['coin', 'window', 'status', 'start_time', 'end_time', 'limit', 'cursor']],
    [`/v3/${p}/{market_id}/orderbook/latest`, ['market_id', 'as_of', 'clock', 'outcome']],
    [`/v3/${p}/{market_id}/snapshots`, ['market_id', 'start_time', 'end_time', 'limit', 'cursor', 'depth', 'include_orderbook', 'outcome']],
    [`/v3/${p}/{market_id}/timeseries`, ['market_id', 'metric', 'outcome', 'start_time', 'end_time', 'limit', 'cursor']],
    [`/v3/${p}/{market_id}/trades`, ['market_id']],
  ]),
  ['/v3/yesno-exchange/markets', ['series', 'status', 'limit', 'cursor', 'start_time', 'end_time']],
  [
    '/v3/yesno-exchange/{market_ticker}/snapshots',
    ['market_ticker', 'include_orderbook', 'start_time', 'end_time', 'limit', 'cursor', 'depth'],
  ],
  ['/v3/{coin}/markets', ['coin', 'limit', 'cursor', 'status', 'window']],
  [
    '/v3/{coin}/markets/{market_id}/snapshots',
    ['coin', 'market_id', 'include_orderbook', 'interval', 'start_time', 'end_time', 'limit', 'cursor', 'depth'],
  ],
  ['/v3/coverage', ['family', 'market_id', 'ticker', 'start_time', 'end_time']],
  ['/v3/datasets', ['family', 'start_date', 'end_date']],
  ['/v3/datasets/files/{*}', ['*']],
  ['/v3/stream', ['api_key']],
  ['/v3/replay', ['family', 'market_id', 'ticker', 'coin', 'window', 'start_time', 'end_time', 'types', 'depth', 'after']],
];
/** Parameters the contract requires. */
const REQUIRED: Record<string, string[]> = {
  '/v3/wallet-prediction/{market_id}/timeseries': ['metric'],
  '/v3/partner-venue/{market_id}/timeseries': ['metric'],
  '/v3/replay': ['family', 'start_time'],
};
/** Routes that can answer 403 plan_required (paid family, or a paid family's data). */
const PLAN_403 = /^\/v3\/(wallet-prediction|partner-venue|datasets|replay|stream)/;
/** Routes that can answer 404 (a market, ticker, coin or file named in the path or query). */
const NAMES_404 = (path: string): boolean => /[{]/.test(path) || /^\/v3\/(coverage|replay|datasets\/rows)$/.test(path);

/** The error response of one status is the envelope of §2 as JSON. */
function isEnvelope(resp: any): boolean {
  const s = resp?.content?.['application/json']?.schema;
  const e = s?.properties?.error;
  return (
    s?.type === 'object' &&
    e?.type === 'object' &&
    ['status', 'code', 'message', 'request_id'].every((k) => e.required?.includes(k) && e.properties?.[k])
  );
}

/** The usage file: a markets list and a snapshots page through the generated client. */
const USAGE = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export function pmtape(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  return {
    /** A markets list: the ids of one coin's open markets, or the error code. */
    async openMarkets(coin: string): Promise<string[] | string> {
      const { data, error } = await client.GET('/v3/{coin}/markets', { params: { path: { coin }, query: { status: 'open', limit: 50 } } });
      if (error) return error.error.code;
      const next: string | null = data.next_cursor;
      void next;
      return data.data.map((m) => m.market_id ?? '');
    },
    /** One snapshots page: the seqs and best bids of a market's books, and the cursor of the next page. */
    async snapshotsPage(coin: string, marketId: string, cursor?: string): Promise<{ seqs: number[]; bestBids: number[]; next: string | null }> {
      const { data, error } = await client.GET('/v3/{coin}/markets/{market_id}/snapshots', {
        params: { path: { coin, market_id: marketId }, query: { include_orderbook: true, limit: 20, cursor } },
      });
      if (error) throw new Error(\`\${error.error.code}: \${error.error.message} (\${error.error.request_id})\`);
      const seqs: number[] = data.data.map((s) => s.seq ?? -1);
      const bestBids = data.data.flatMap((s) => (s.books ?? []).map((b) => b.bids?.[0]?.[0] ?? Number.NaN));
      return { seqs, bestBids, next: data.next_cursor };
    },
    /** The generated types must bite, or this file would compile against anything. */
    async misuse(): Promise<void> {
      // @ts-expect-error 'limits' is not a parameter of the markets list
      await client.GET('/v3/{coin}/markets', { params: { path: { coin: 'btc' }, query: { limits: 5 } } });
      // @ts-expect-error 'interval' takes raw, 1s, 1m, 5m or 1h only
      await client.GET('/v3/{coin}/markets/{market_id}/snapshots', { params: { path: { coin: 'btc', market_id: 'x' }, query: { interval: '2m' } } });
      // @ts-expect-error the path parameter market_id is required
      await client.GET('/v3/{coin}/markets/{market_id}/snapshots', { params: { path: { coin: 'btc' } } });
      // @ts-expect-error no such route
      await client.GET('/v3/{coin}/candlesticks', {});
      const { data } = await client.GET('/v3/{coin}/markets/{market_id}/snapshots', { params: { path: { coin: 'btc', market_id: 'x' } } });
      // @ts-expect-error a snapshot's seq is a number
      const seq: string | undefined = data?.data[0]?.seq;
      void seq;
    },
  };
}
`;

/**
 * The project's own tsc (TypeScript 7, installed as `@typescript/native`: the name `typescript` is the
 * classic TypeScript 6 that typescript-eslint needs): its native executable, found as its `bin/tsc` shim
 * finds it. Not the shim itself: the test runner's process hooks, passed on to node children, cannot load it.
 */
async function tsc(dir: string, args: string[]): Promise<{ code: number | null; out: string }> {
  const lib = pathToFileURL(join(REPO, 'node_modules', '@typescript', 'native', 'lib', 'getExePath.js')).href;
  const exe = ((await import(lib)) as { default: () => string }).default();
  return new Promise((resolve) => {
    // Asynchronous: the serve child's output keeps being read meanwhile.
    execFile(exe, ['-p', join(dir, 'tsconfig.json'), ...args], { encoding: 'utf8', timeout: 300_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}${err && typeof err.code !== 'number' ? err.message : ''}` });
    });
  });
}

t.test('the document of a running serve validates, covers the contract, and a generated client compiles and runs', async (t) => {
  const dataDir = tmpDataDir(t);
  await seedAll(dataDir);
  const key = (await createKey(dataDir, 'paid', 'openapi')).key;
  const serve = runCli(t, ['serve', '--data-dir', dataDir], { env: { PMTAPE_PORT: '0', PMTAPE_RATE_LIMITS: 'off' } });
  const base = (await serve.ready).replace(/\/$/, '');
  const res = await fetch(`${base}/docs/json`);
  t.equal(res.status, 200);
  const doc = (await res.json()) as Doc;

  await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), 'swagger-parser validate() accepts the document');

  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([m, op]) => ({ path, m, op })));
  for (const { path, op } of ops) {
    for (const p of op.parameters ?? []) {
      t.notOk(
        ['type', 'additionalProperties', 'properties', 'required'].includes(p.name),
        `${path}: no schema keyword as parameter (${p.name})`,
      );
      t.equal(typeof p.schema, 'object', `${path}: parameter ${p.name} has a schema`);
    }
    t.ok(op.responses?.['500'] && isEnvelope(op.responses['500']), `${path}: 500 answers the envelope`);
  }

  for (const [path, names] of CONTRACT) {
    const op = doc.paths[path]?.get;
    if (!t.ok(op, `${path} is documented`)) continue;
    const params = new Map<string, any>((op.parameters ?? []).map((p: any) => [p.name, p]));
    for (const n of names) t.ok(params.has(n), `${path}: parameter ${n}`);
    for (const n of REQUIRED[path] ?? []) t.equal(params.get(n)?.required, true, `${path}: ${n} required`);
    for (const p of params.values()) if (p.in === 'path') t.equal(p.required, true, `${path}: path parameter ${p.name} required`);
    if (!path.startsWith('/v3/')) {
      t.same(op.security, [], `${path} needs no key`);
      continue;
    }
    t.ok((op.security ?? doc.security)?.length, `${path} needs the key`);
    const want = [
      400,
      401,
      ...(PLAN_403.test(path) ? [403] : []),
      ...(NAMES_404(path) ? [404] : []),
      ...(path === '/v3/stream' ? [] : [429]),
    ];
    for (const s of want) t.ok(isEnvelope(op.responses?.[String(s)]), `${path}: ${s} answers the envelope`);
  }
  t.ok(isEnvelope(doc.paths['/healthz']?.get?.responses?.['400']), '/healthz: an unknown parameter is a 400 envelope');
  t.same(doc.paths['/healthz']?.get?.parameters ?? [], [], '/healthz takes no parameters');
  t.same(Object.keys(doc.paths['/v3/replay']?.get?.responses?.['200']?.content ?? {}), ['application/x-ndjson'], 'replay streams NDJSON');

  // A documented error status is what the route answers: the envelope, unchanged by its schema.
  const bad = await fetch(`${base}/v3/btc/markets?nope=1`, { headers: { Authorization: `Bearer ${key}` } });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: { status: 400, code: 'invalid_parameter', message: /'nope'/, request_id: String } });
  const bare = await fetch(`${base}/healthz?type=object`);
  t.equal(bare.status, 400, '/healthz rejects the former bogus parameter');

  // The client: types generated from the document, the usage file compiled by the project's tsc.
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-openapi-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const types = await openapiTS(structuredClone(doc) as never);
  for (const { path } of ops) t.ok(types.includes(`"${path}": {`), `the types name ${path}`);
  writeFileSync(join(dir, 'api.ts'), types);
  writeFileSync(join(dir, 'usage.ts'), USAGE);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  mkdirSync(join(dir, 'out'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: false,
        types: [],
        lib: ['ES2022', 'DOM'],
        outDir: 'out',
        noEmitOnError: true,
      },
      files: ['usage.ts'],
    }),
  );
  const check = await tsc(dir, ['--noEmit']);
  t.equal(check.code, 0, `tsc --noEmit compiles the usage file against the generated client\n${check.out}`);
  const emit = await tsc(dir, []);
  if (!t.equal(emit.code, 0, `tsc emits the usage file\n${emit.out}`)) return;

  // And the compiled client works against the server that described itself.
  const usage = (await import(join(dir, 'out', 'usage.js'))) as { pmtape(base: string, key: string): any };
  const api = usage.pmtape(base, key);
  t.same(await api.openMarkets('btc'), [coinMarket.market_id], 'markets list');
  t.equal(await api.openMarkets('doge'), 'not_found', 'an error answers the typed envelope');
  const page1 = await api.snapshotsPage('btc', coinMarket.market_id);
  t.equal(page1.seqs.length, 20);
  t.ok(
    page1.bestBids.every((p: number) => p > 0 && p < 1),
    'best bids are prices',
  );
  t.type(page1.next, 'string');
  const page2 = await api.snapshotsPage('btc', coinMarket.market_id, page1.next);
  t.ok(page2.seqs[0] > page1.seqs[page1.seqs.length - 1], 'the next page follows the cursor');
});

t.test('any route whose querystring has no properties documents no parameters, and every route the envelope', async (t) => {
  const app = Fastify(serverOptions()); // the API's strict query validation (unknown parameters rejected)
  t.teardown(() => app.close());
  await app.register(errorHandler);
  await app.register(openapiPlugin);
  app.get('/open', { schema: { querystring: { type: 'object', additionalProperties: false } } }, async () => ({}));
  app.get('/v3/thing/:market_id', { config: { plan: 'paid' }, schema: { querystring: { type: 'object' } } }, async () => ({}));
  app.get('/v3/list', { config: { plan: 'free' }, schema: {} }, async () => ({}));
  await app.ready();
  const doc = (await app.inject({ url: '/docs/json' })).json<Doc>();
  await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), 'valid');
  t.same(doc.paths['/open'].get.parameters ?? [], []);
  t.same(Object.keys(doc.paths['/open'].get.responses), ['400', '500']);
  t.same(Object.keys(doc.paths['/v3/thing/{market_id}'].get.responses), ['400', '401', '403', '404', '429', '500']);
  t.same(Object.keys(doc.paths['/v3/list'].get.responses), ['400', '401', '429', '500']);
  for (const op of [doc.paths['/open'].get, doc.paths['/v3/thing/{market_id}'].get]) {
    for (const [s, r] of Object.entries(op.responses)) t.ok(isEnvelope(r), `${s} is the envelope`);
  }
  // Validation of the query still rejects unknown parameters (the added `properties` is empty).
  const r = await app.inject({ url: '/open?type=object' });
  t.equal(r.statusCode, 400);
  t.match(
    r.json(),
    { error: { status: 400, code: 'invalid_parameter', message: /'type'/, request_id: String } },
    'the envelope, serialized by the added schema',
  );
});
