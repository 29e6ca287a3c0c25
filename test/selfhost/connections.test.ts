// A real `serve` under a flood of half-open connections (`GET / HTTP/1.1\r\nHost: x\r\n` and then
// nothing), from real sockets bound to several loopback addresses (127.0.0.x): the caps of
// src/api/connection-guard.ts, set low through the environment. While the flood holds, /healthz
// and a keyed route answer; the cap is per client address (one address's flood closes its own
// oldest sockets, never another address's); past the total cap the oldest idle go first; and a
// request whose headers never finish is closed after the headers timeout.

import t from 'tap';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { createKey } from '../../src/api/plugins/keys.js';
import { runCli, tempDir, waitFor } from './helpers.js';

const HALF_OPEN = 'GET / HTTP/1.1\r\nHost: x\r\n';

interface Flood {
  readonly sockets: Socket[];
  /** Sockets the server has closed. */
  closed(): number;
  open(): number;
}

/** `n` half-open connections from `from`, each connected and its partial request sent. */
async function flood(t: Tap, url: string, from: string, n: number): Promise<Flood> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  let closed = 0;
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: hostname, port: Number(port), localAddress: from });
          sockets.push(s);
          s.on('error', () => undefined); // a reset by the server is what is tested, not a failure
          s.resume(); // read (and drop) what the server answers, so that its close is seen
          s.once('close', () => {
            closed++;
            resolve();
          });
          s.once('connect', () => s.write(HALF_OPEN, () => resolve()));
        }),
    ),
  );
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  return { sockets, closed: () => closed, open: () => n - closed };
}
type Tap = Parameters<typeof tempDir>[0];

/** One GET from `from`; resolves with the status (0 when the connection failed). */
function get(url: string, path: string, from: string, key?: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      new URL(path, url),
      { localAddress: from, agent: false, headers: key ? { authorization: `Bearer ${key}` } : {} },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('error', () => resolve(0));
    req.end();
  });
}

/** GET until it answers (a request can meet a socket shed in the same instant), at most `tries`. */
async function answers(url: string, path: string, from: string, key?: string, tries = 5): Promise<number> {
  let status = 0;
  for (let i = 0; i < tries && status === 0; i++) status = await get(url, path, from, key);
  return status;
}

t.test('a flood of half-open connections: capped per address and in all, /healthz and keyed routes answer', async (t) => {
  const dir = tempDir(t);
  const { key } = await createKey(dir, 'free', 'connections');
  const child = runCli(t, ['serve', '--data-dir', dir, '--port', '0'], {
    env: { PMTAPE_MAX_CONNECTIONS: '200', PMTAPE_MAX_CONNECTIONS_PER_ADDRESS: '50', PMTAPE_HEADERS_TIMEOUT_MS: '600000' },
  });
  const url = await child.ready;

  // 300 from one address: it keeps at most 50 open, its oldest closed to make room for the newer.
  const a = await flood(t, url, '127.0.0.1', 300);
  t.ok(await waitFor(async () => a.open() <= 50, 30_000, 50), `at most 50 of one address's connections stay open (open: ${a.open()})`);
  const oldOpen = a.sockets.slice(0, 100).filter((s) => !s.destroyed).length;
  t.equal(oldOpen, 0, 'none of the 100 oldest is left: the oldest were closed first');

  // While it holds: another address gets answers, from /healthz and from a keyed route.
  t.equal(await answers(url, '/healthz', '127.0.0.2'), 200, '/healthz answers another address');
  t.equal(await answers(url, '/v3/coverage?family=coin', '127.0.0.2', key), 200, 'a keyed route answers another address');
  // The flooding address itself too: its newest request closes its own oldest idle socket.
  t.equal(await answers(url, '/healthz', '127.0.0.1'), 200, '/healthz answers the flooding address');

  // Per address: a second address's 50 are not counted against the first one's.
  const b = await flood(t, url, '127.0.0.3', 50);
  t.equal(await answers(url, '/healthz', '127.0.0.2'), 200);
  t.equal(b.open(), 50, 'a second address keeps all of its 50');

  // The total cap (200): three more addresses' 50 each close the oldest idle sockets, whoever's.
  const more = await Promise.all(['127.0.0.4', '127.0.0.5', '127.0.0.6'].map((from) => flood(t, url, from, 50)));
  const open = (): number => a.open() + b.open() + more.reduce((n, f) => n + f.open(), 0);
  t.ok(await waitFor(async () => open() <= 200, 30_000, 50), `at most 200 open in all (open: ${open()})`);
  t.ok(a.open() < 50, `the oldest (the first address's) went first (left: ${a.open()})`);
  t.equal(more[2].open(), 50, 'the newest address kept all of its own');
  t.equal(await answers(url, '/healthz', '127.0.0.2'), 200, '/healthz still answers');
  t.equal(await answers(url, '/v3/coverage?family=coin', '127.0.0.7', key), 200, 'and the keyed route, from a new address');
});

t.test('a request whose headers never finish is closed after the headers timeout', async (t) => {
  const dir = tempDir(t);
  const child = runCli(t, ['serve', '--data-dir', dir, '--port', '0'], { env: { PMTAPE_HEADERS_TIMEOUT_MS: '1000' } });
  const url = await child.ready;
  const f = await flood(t, url, '127.0.0.1', 5);
  // Node's default (60 s, checked every 30 s) would keep them well past this wait.
  t.ok(await waitFor(async () => f.closed() === 5, 20_000, 100), `closed by the server (closed: ${f.closed()})`);
  t.equal(await answers(url, '/healthz', '127.0.0.1'), 200);
});

t.test('bad limits are refused naming the variable', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.throws(() => loadConfig({}, { PMTAPE_MAX_CONNECTIONS: '0' }), /PMTAPE_MAX_CONNECTIONS must be a whole number ≥ 1, got "0"/);
  t.throws(() => loadConfig({}, { PMTAPE_MAX_CONNECTIONS_PER_ADDRESS: '1e3' }), /PMTAPE_MAX_CONNECTIONS_PER_ADDRESS/);
  t.equal(
    loadConfig({}, { PMTAPE_MAX_CONNECTIONS: '10', PMTAPE_MAX_CONNECTIONS_PER_ADDRESS: '20' }).server.maxConnectionsPerAddress,
    10,
    'per address never above the total',
  );
});
