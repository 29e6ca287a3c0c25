// A real `pmtape serve` process, its real log output captured: a key sent where it does not belong
// (`?api_key=` on a REST route, percent-encoded, in the path) or where it does (`Authorization`, the
// stream's `?api_key=`) never appears in a log line, at the most verbose level; requests the HTTP
// parser refuses (a raw 0xFF byte, a 100 kB query) are answered with the pmtape envelope, not
// Fastify's own body; and a REST 401 names its scheme in `WWW-Authenticate`.

import t from 'tap';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { createKey } from '../../src/api/plugins/keys.js';
import { redactHeaders, redactUrl } from '../../src/api/redact.js';
import { CLI } from '../client/serve-helpers.js';
import { seedAll, tmpDataDir } from './helpers.js';

/** Sends raw bytes and reads until the server closes (or, `firstOnly`, until the first bytes). */
function raw(port: number, bytes: Buffer | string, firstOnly = false): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (firstOnly) s.destroy();
    });
    s.on('close', () => resolve(out));
    s.on('error', () => undefined);
    s.write(bytes);
  });
}

const envelopeOf = (response: string): { status: number; code: string; message: string; request_id: string } =>
  (
    JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as {
      error: { status: number; code: string; message: string; request_id: string };
    }
  ).error;

t.test('redactUrl and redactHeaders', async (t) => {
  const key = 'pmt_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
  t.equal(redactUrl(`/v3/coverage?api_key=${key}&limit=5`), '/v3/coverage?api_key=[redacted]&limit=5');
  t.equal(redactUrl(`/v3/coverage?limit=5&API%5FKEY=secret`), '/v3/coverage?limit=5&API%5FKEY=[redacted]', 'a percent-encoded name');
  t.equal(redactUrl(`/v3/${key}/x?q=${encodeURIComponent(key)}`), '/v3/[redacted]/x?q=[redacted]', 'a key anywhere, encoded or not');
  t.equal(redactUrl('/v3/btc/markets?limit=5&cursor=abc.def'), '/v3/btc/markets?limit=5&cursor=abc.def', 'nothing else changes');
  t.equal(redactUrl('/v3/stream?token=a&key=b&access_token=c'), '/v3/stream?token=[redacted]&key=[redacted]&access_token=[redacted]');
  t.same(redactHeaders({ authorization: `Bearer ${key}`, Cookie: 'a=b', host: 'x', 'x-note': key }), {
    authorization: '[redacted]',
    Cookie: '[redacted]',
    host: 'x',
    'x-note': '[redacted]',
  });
});

t.test('serve logs no key, answers parser errors with the envelope, and 401 names Bearer', async (t) => {
  const dir = tmpDataDir(t);
  await seedAll(dir);
  const free = (await createKey(dir, 'free', 'log-test')).key;
  // The part that must never be logged: everything after the id (base64url, so it may hold '_' itself:
  // split('_')[2] was '' for a secret starting with one, and '' is in every line).
  const secret = (k: string): string => k.slice(k.indexOf('_', 4) + 1);
  const wrong = 'pmt_0123456789ab_' + 'Z'.repeat(43);
  const proc = spawn(process.execPath, [CLI, 'serve', '--data-dir', dir, '--port', '0'], {
    env: { ...process.env, PMTAPE_LOG_LEVEL: 'trace', PMTAPE_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out.slice(-2000)}`)), 90_000);
    const check = (): void => {
      const m = /^ready (\S+)/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout.on('data', check);
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out.slice(-2000)}`)));
  });
  const port = Number(new URL(base).port);

  // REST routes refuse a key in the query; it must still not be logged.
  for (const q of [`api_key=${free}`, `api%5Fkey=${encodeURIComponent(free)}`, `limit=5&token=${free}`]) {
    const res = await fetch(`${base}/v3/coverage?${q}`);
    t.equal(res.status, 401, `?${q.split('=')[0]}= is refused`);
    t.equal(res.headers.get('www-authenticate'), 'Bearer realm="pmtape"', 'the 401 names its scheme');
  }
  t.equal((await fetch(`${base}/v3/${free}/markets`)).status, 401, 'a key in the path is refused');
  const ok = await fetch(`${base}/v3/coverage?limit=1`, { headers: { authorization: `Bearer ${free}` } });
  t.equal(ok.status, 200, 'the header is the way');
  t.equal(ok.headers.get('www-authenticate'), null, 'no challenge on success');
  const bad = await fetch(`${base}/v3/coverage`, { headers: { authorization: `Bearer ${wrong}` } });
  t.equal(bad.status, 401);
  t.equal(bad.headers.get('www-authenticate'), 'Bearer realm="pmtape"', 'a wrong key is challenged too');

  // Requests Node's parser refuses: the pmtape envelope, with the header that carried a key.
  const ff = await raw(
    port,
    Buffer.concat([
      Buffer.from('GET /v3/coverage?x='),
      Buffer.from([0xff]),
      Buffer.from(` HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${free}\r\n\r\n`),
    ]),
  );
  t.match(ff, /^HTTP\/1\.1 400 /, 'a raw 0xFF byte is a 400');
  t.match(envelopeOf(ff), { status: 400, code: 'invalid_parameter', message: /percent-encode/, request_id: /\S/ }, 'with the envelope');
  t.notMatch(ff, /"statusCode"/, "not Fastify's body");
  const big = await raw(
    port,
    `GET /v3/coverage?api_key=${free}&x=${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${free}\r\n\r\n`,
  );
  t.match(big, /^HTTP\/1\.1 431 /, 'a 100 kB query is a 431');
  t.match(envelopeOf(big), { status: 431, code: 'request_too_large', message: /shorten the query/, request_id: /\S/ }, 'with the envelope');
  t.match(big, /x-request-id: \S+/i, 'and its request id header');

  // The stream takes `?api_key=` legitimately: not logged either.
  const ws = await raw(
    port,
    `GET /v3/stream?api_key=${free} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    true,
  );
  t.match(ws, /^HTTP\/1\.1 101 /, 'the stream accepts the key in its query');

  proc.kill('SIGTERM');
  await exited;
  t.match(out, /"url":"\/v3\/coverage\?api_key=\[redacted\]"/, 'the refused request was logged, redacted');
  t.match(out, /"url":"\/v3\/coverage\?limit=1"/, 'ordinary URLs are logged as they are');
  for (const [name, k] of [
    ['the free key', free],
    ['the wrong key', wrong],
  ] as const) {
    t.notOk(out.includes(secret(k)), `${name}'s secret is in no log line`);
    t.notOk(out.includes(encodeURIComponent(k)), `${name} (encoded) is in no log line`);
  }
});
