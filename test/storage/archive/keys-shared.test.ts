// API keys shared through the archive: `pmtape keys create/revoke` on a recorder host publishes the
// key file to the bucket with conditional writes (two hosts creating keys at once both land), and a
// stateless reader (`serve` with no logs) follows it: a new key is accepted, a revoked one refused,
// within seconds and without a restart.

import t from 'tap';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { requireTool } from '../../helpers/toolchains.js';
import { tmpDataDir } from '../../api/helpers.js';
import { runCli, runCliOnce, waitFor } from '../../selfhost/helpers.js';
import { startWeed, archiveEnv } from '../../../tools/fixtures/weed.js';
import { getObject } from './common.js';

const bin = requireTool(t, 'seaweedfs');

/** `keys create` prints the key alone on its stdout line. */
const keyFrom = (stdout: string): string | null => /^(pmt_\S+)$/m.exec(stdout)?.[1] ?? null;

if (bin) {
  t.test('keys created and revoked on hosts reach a reader through the archive', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-keys');
    const url = 's3://pmtape-keys/k';
    const env = archiveEnv(weed.endpoint, url);
    const keysOf = async (): Promise<string[]> =>
      (
        JSON.parse((await getObject(weed.client, 'pmtape-keys', 'k/_archive/keys.json')).toString('utf8')) as { keys: { id: string }[] }
      ).keys
        .map((k) => k.id)
        .sort();

    // The store refuses a write conditioned on an ETag the object does not have (what publishing relies on).
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-keys', Key: 'k/probe', Body: 'a' }));
    const refused = await weed.client
      .send(new PutObjectCommand({ Bucket: 'pmtape-keys', Key: 'k/probe', Body: 'b', IfMatch: '"0123"' }))
      .then(
        () => 0,
        (e: { $metadata?: { httpStatusCode?: number } }) => e.$metadata?.httpStatusCode,
      );
    t.equal(refused, 412, 'If-Match on a stale ETag is refused with 412');

    const hostA = tmpDataDir(t);
    const a = await runCliOnce(['keys', 'create', '--plan', 'paid', '--name', 'a', '--data-dir', hostA], { env });
    t.equal(a.code, 0, 'keys create on host A');
    t.match(a.stderr, /keys published to s3:\/\/pmtape-keys\/k/);
    const keyA = keyFrom(a.stdout)!;
    // Two more hosts create keys at the same moment: neither write may lose the other's key.
    const [b, c] = await Promise.all(
      ['b', 'c'].map((n) => runCliOnce(['keys', 'create', '--plan', 'free', '--name', n, '--data-dir', tmpDataDir(t)], { env })),
    );
    t.equal(b.code, 0, 'keys create on host B');
    t.equal(c.code, 0, 'keys create on host C');
    const idOf = (k: string): string => k.split('_')[1];
    t.same(await keysOf(), [keyA, keyFrom(b.stdout)!, keyFrom(c.stdout)!].map(idOf).sort(), "the archive holds every host's key");

    const reader = tmpDataDir(t);
    const child = runCli(t, ['serve', '--data-dir', reader, '--port', '0'], { env, readyTimeoutMs: 120_000 });
    const base = await child.ready;
    const status = async (key: string): Promise<number> =>
      (await fetch(`${base}/v3/datasets`, { headers: { authorization: `Bearer ${key}` } })).status;
    t.ok(await waitFor(async () => (await status(keyA)) === 200 || null, 60_000), 'the reader accepts a key created on a host');
    t.equal(await status(keyFrom(b.stdout)!), 200, 'and the keys of the other hosts');

    const revoke = await runCliOnce(['keys', 'revoke', idOf(keyA), '--data-dir', hostA], { env });
    t.equal(revoke.code, 0, 'keys revoke on host A');
    t.ok(await waitFor(async () => (await status(keyA)) === 401 || null, 60_000), 'the revocation reaches the reader without a restart');
    t.equal(await status(keyFrom(c.stdout)!), 200, 'other keys still work');
  });
}
