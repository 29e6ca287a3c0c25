// A single PUT is proven by the store's check of its signed payload hash (client.ts checksPayloads)
// instead of an MD5, only where the store provably makes that check: the real SeaweedFS refuses a
// body changed on the way (a proxy flips one byte: the PUT fails, nothing lands, and a sync retries
// it and publishes the day exactly); a store that accepts anything is found out by the probe, which
// leaves nothing behind, and then the MD5 goes with every PUT again.

import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { archiveClient, checksPayloads, PAYLOAD_PROBE } from '../../../src/storage/archive/client.js';
import { upload } from '../../../src/storage/archive/objects.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { DAY, compactedDay, getObject, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly md5: string | undefined;
}

/** An HTTP server on an ephemeral port, closed at teardown. */
async function listen(t: Test, server: Server): Promise<string> {
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  t.teardown(
    () =>
      new Promise<void>((res) => {
        server.closeAllConnections();
        server.close(() => res());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A proxy to `target` that flips the first body byte of a PUT whose path `flip` picks. */
async function flippingProxy(t: Test, target: string, flip: (path: string) => boolean): Promise<{ url: string; seen: Seen[] }> {
  const up = new URL(target);
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const path = decodeURIComponent(req.url ?? '').split('?')[0];
    seen.push({ method: req.method ?? '', path, md5: req.headers['content-md5'] as string | undefined });
    const out = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (ures) => {
      res.writeHead(ures.statusCode ?? 502, ures.headers);
      ures.pipe(res);
    });
    out.on('error', () => req.socket.destroy());
    let first = req.method === 'PUT' && flip(path);
    req.on('data', (d: Buffer) => {
      if (first && d.length > 0) {
        d = Buffer.from(d);
        d[0] ^= 0x01;
        first = false;
      }
      out.write(d);
    });
    req.on('end', () => out.end());
  });
  return { url: await listen(t, server), seen };
}

if (bin) {
  t.test('SeaweedFS checks payload hashes: a flipped byte is refused, nothing lands, a sync retries it', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-payload');
    const s3 = archiveClient(useTestArchive('s3://pmtape-payload/p', weed.endpoint));
    t.teardown(() => s3.destroy());
    t.equal(await checksPayloads(s3, 'pmtape-payload', `p/${PAYLOAD_PROBE}`), true, 'the probe is refused');
    t.same(await listKeys(weed.client, 'pmtape-payload'), [], 'and leaves nothing in the bucket');

    const proxy = await flippingProxy(t, weed.endpoint, (p) => p.endsWith('/flipped.bin'));
    const via = archiveClient(useTestArchive('s3://pmtape-payload/p', proxy.url));
    t.teardown(() => via.destroy());
    const dir = t.testdir();
    const bytes = randomBytes(300_000);
    const path = join(dir, 'x.bin');
    await writeFile(path, bytes);
    const o = (key: string) => ({
      key,
      path,
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      contentType: 'application/octet-stream',
    });
    await t.rejects(
      upload(via, 'pmtape-payload', o('flipped.bin'), true),
      { name: 'XAmzContentSHA256Mismatch' },
      'the changed body is refused',
    );
    t.notOk((await listKeys(weed.client, 'pmtape-payload')).includes('flipped.bin'), 'and not stored');
    t.equal(
      proxy.seen.find((s) => s.path.endsWith('/flipped.bin'))?.md5,
      undefined,
      'no Content-MD5 was sent: the payload hash alone refused it',
    );
    await upload(via, 'pmtape-payload', o('intact.bin'), true);
    t.ok(bytes.equals(await getObject(weed.client, 'pmtape-payload', 'intact.bin')), 'an intact body is stored exactly');

    // A whole day through the proxy, one data file's first PUT changed on the way: retried, exact.
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    const victim = [...local.keys()].find((k) => k.endsWith('.parquet'))!;
    let flips = 0;
    const dayProxy = await flippingProxy(t, weed.endpoint, (p) => p.endsWith(`/d/${victim}`) && flips++ === 0);
    const r = await syncArchive(dataDir, useTestArchive('s3://pmtape-payload/d', dayProxy.url), { days: [DAY] });
    t.match(r, { days: 1, failed: 0 }, JSON.stringify(r.errors));
    t.equal(flips, 2, 'the victim was sent twice: once changed (refused), once intact');
    for (const [k, b] of local) t.ok(b.equals(await getObject(weed.client, 'pmtape-payload', `d/${k}`)), `${k} equals the local file`);
    t.notOk(
      (await listKeys(weed.client, 'pmtape-payload', 'd/')).some((k) => k.includes(PAYLOAD_PROBE)),
      'no probe object left beside the day',
    );
  });
}

t.test('a store that does not check payload hashes: the probe says so, cleans up, and the MD5 goes again', async (t) => {
  const seen: Seen[] = [];
  // Accepts every PUT (whatever its body) with an ETag, and every DELETE.
  const server = createServer((req, res) => {
    seen.push({
      method: req.method ?? '',
      path: decodeURIComponent(req.url ?? '').split('?')[0],
      md5: req.headers['content-md5'] as string | undefined,
    });
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const etag = createHash('md5').update(Buffer.concat(chunks)).digest('hex');
      res.writeHead(req.method === 'DELETE' ? 204 : 200, req.method === 'PUT' ? { etag: `"${etag}"` } : {});
      res.end();
    });
  });
  const url = await listen(t, server);
  const s3 = archiveClient(useTestArchive('s3://lax/p', url), { maxAttempts: 1 });
  t.teardown(() => s3.destroy());
  t.equal(await checksPayloads(s3, 'lax', `p/${PAYLOAD_PROBE}`), false, 'the wrong payload hash was accepted: no check');
  t.same(
    seen.map((s) => `${s.method} ${s.path}`),
    [`PUT /lax/p/${PAYLOAD_PROBE}`, `DELETE /lax/p/${PAYLOAD_PROBE}`],
    'the probe object is deleted again',
  );
  t.equal(await checksPayloads(s3, 'lax', `p/${PAYLOAD_PROBE}`), false, 'asked once per client and bucket');
  t.equal(seen.length, 2, 'no second probe');

  const body = Buffer.from('manifest bytes\n');
  const sha256 = createHash('sha256').update(body).digest('hex');
  await upload(s3, 'lax', { key: 'p/m.json', body, size: body.length, sha256, contentType: 'application/json' }, false);
  t.equal(seen.at(-1)?.md5, createHash('md5').update(body).digest('base64'), 'without the check, the PUT carries Content-MD5');
});
