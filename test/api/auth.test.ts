// Keys and plans: the 401/403 matrix, per-key rate limits with Retry-After, and the CLI managing
// keys of a running `serve` process (created and revoked keys apply without a restart).

import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createKey, keysPath } from '../../src/api/plugins/keys.js';
import { keysFor, seedAll, testApp, testConfig, tmpDataDir } from './helpers.js';

const CLI = fileURLToPath(new URL('../../cli.js', import.meta.url));
const run = promisify(execFile);

t.test('the auth matrix of the contract', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const app = await testApp(t, testConfig(dir));
  const code = async (url: string, auth?: string): Promise<[number, string]> => {
    const r = await app.inject({ url, headers: auth === undefined ? {} : { authorization: auth } });
    return [r.statusCode, r.json().error?.code ?? 'ok'];
  };
  const paidRoute = '/v3/wallet-prediction/markets';
  const freeRoutes = ['/v3/btc/markets', '/v3/yesno-exchange/markets', '/v3/coverage'];
  t.same(await code(paidRoute), [401, 'unauthorized'], 'no key');
  t.same(await code(paidRoute, 'Basic abc'), [401, 'unauthorized'], 'not a bearer header');
  t.same(await code(paidRoute, 'Bearer '), [401, 'unauthorized'], 'empty bearer');
  t.same(await code(paidRoute, `Bearer ${keys.paid}x`), [401, 'unauthorized'], 'tampered key');
  t.same(await code(paidRoute, `Bearer ${keys.paid.slice(0, 17) + 'A'.repeat(43)}`), [401, 'unauthorized'], 'right id, wrong secret');
  t.same(await code(paidRoute, `Bearer ${keys.free}`), [403, 'plan_required'], 'free key on a paid route');
  t.same(await code('/v3/partner-venue/w-9001/snapshots', `Bearer ${keys.free}`), [403, 'plan_required'], 'free key on the alias');
  t.same(await code(paidRoute, `Bearer ${keys.paid}`), [200, 'ok']);
  for (const r of freeRoutes) {
    t.same(await code(r, `Bearer ${keys.free}`), [200, 'ok'], `free key on ${r}`);
    t.same(await code(r, `Bearer ${keys.paid}`), [200, 'ok'], `paid key on ${r}`);
    t.same(await code(r), [401, 'unauthorized'], `no key on ${r}`);
  }
  t.same(await code('/healthz'), [200, 'ok'], 'health is open');
  const stored = readFileSync(keysPath(dir), 'utf8');
  t.notOk(stored.includes(keys.paid), 'the key file never holds a key in plain text');
  t.notOk(stored.includes(keys.paid.slice(17)), 'nor its secret part');
});

t.test('rate limits are per key and plan, with 429 rate_limited and Retry-After', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const keys = await keysFor(dir);
  const other = (await createKey(dir, 'free', 'other')).key;
  const app = await testApp(t, testConfig(dir, { rateLimits: { free: { max: 3, windowMs: 60_000 }, paid: { max: 6, windowMs: 60_000 } } }));
  const hit = (key: string) => app.inject({ url: '/v3/btc/markets', headers: { authorization: `Bearer ${key}` } });
  for (let i = 0; i < 3; i++) t.equal((await hit(keys.free)).statusCode, 200);
  const limited = await hit(keys.free);
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().error.code, 'rate_limited');
  t.type(limited.json().error.request_id, 'string');
  const after = Number(limited.headers['retry-after']);
  t.ok(after > 0 && after <= 60, `Retry-After ${limited.headers['retry-after']}`);
  t.equal((await hit(other)).statusCode, 200, 'another free key has its own budget');
  for (let i = 0; i < 6; i++) t.equal((await hit(keys.paid)).statusCode, 200, 'the paid plan has the larger budget');
  t.equal((await hit(keys.paid)).statusCode, 429);
  t.equal((await app.inject({ url: '/v3/btc/markets' })).statusCode, 401, 'no key is 401, not 429');
});

function startServe(t: any, dir: string): Promise<{ url: string; child: ReturnType<typeof spawn> }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', dir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'warn', PMTAPE_RATE_LIMITS: 'off' },
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^ready (\S+)$/m.exec(out);
      if (m) resolve({ url: m[1], child });
    });
    child.on('exit', (c) => reject(new Error(`serve exited ${c}: ${err}`)));
  });
}

t.test('keys created and revoked by the CLI apply to a running serve process', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const { url, child } = await startServe(t, dir);
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const created = await run(process.execPath, [CLI, 'keys', 'create', '--plan', 'free', '--name', 'cli test', '--data-dir', dir]);
  const lines = created.stdout.split('\n').filter(Boolean);
  t.equal(lines.length, 1, 'create prints one line');
  const key = lines[0];
  t.match(key, /^pmt_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
  const fetchCode = async (): Promise<number> =>
    (await fetch(`${url}/v3/btc/markets`, { headers: { authorization: `Bearer ${key}` } })).status;
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = await fetchCode();
    if (status !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status, 200, 'a key created while serving works');
  const list = await run(process.execPath, [CLI, 'keys', 'list', '--json', '--data-dir', dir]);
  const entries = JSON.parse(list.stdout);
  t.equal(entries.length, 1);
  t.same(Object.keys(entries[0]).sort(), ['created_time', 'id', 'name', 'plan', 'revoked_time']);
  t.notOk(list.stdout.includes(key.slice(17)), 'list never shows the secret');
  await run(process.execPath, [CLI, 'keys', 'revoke', entries[0].id, '--data-dir', dir]);
  for (let i = 0; i < 100 && status !== 401; i++) {
    status = await fetchCode();
    if (status !== 401) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status, 401, 'a key revoked while serving is refused');
  const revokedList = JSON.parse((await run(process.execPath, [CLI, 'keys', 'list', '--json', '--data-dir', dir])).stdout);
  t.type(revokedList[0].revoked_time, 'string');
  await t.rejects(run(process.execPath, [CLI, 'keys', 'revoke', 'ffffffffffff', '--data-dir', dir]), 'revoking an unknown id fails');
  await t.rejects(run(process.execPath, [CLI, 'keys', 'create', '--plan', 'gold', '--name', 'x', '--data-dir', dir]), 'unknown plan fails');
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM exits 0');
});
