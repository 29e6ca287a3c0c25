// Publishing refuses a local data file whose bytes are not its manifest's (same size, so only the
// hash of its one read can tell): the run fails naming the file, the object is not in the bucket
// (never sent when it fits one PUT, deleted again after a multipart upload), neither its partition's
// manifest nor the day record appears; once the file is repaired the day publishes.

import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { archiveClient } from '../../../src/storage/archive/client.js';
import { upload, PART_SIZE } from '../../../src/storage/archive/objects.js';
import { startWeed, useTestArchive, ACCESS_KEY, SECRET_KEY } from '../../../tools/fixtures/weed.js';
import { startFaultProxy } from '../../../tools/fixtures/fault-proxy.js';
import { archiveCli, checkVisibleManifests, compactedDay, getObject, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('a local file unlike its manifest (same size) is refused and never left in the bucket', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-damaged');
    const url = 's3://pmtape-damaged/d';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    // The biggest data file (the one most likely to be in flight when the hash tells).
    const victim = [...local.keys()].filter((k) => k.endsWith('.parquet')).sort((x, y) => local.get(y)!.length - local.get(x)!.length)[0];
    const path = join(dataDir, victim);
    const orig = await readFile(path);
    const bad = Buffer.from(orig);
    bad[Math.floor(bad.length / 2)] ^= 0xff;
    await writeFile(path, bad);

    const refused = await archiveCli(['sync'], dataDir, weed.endpoint, url);
    t.equal(refused.code, 1, 'sync exits 1');
    t.match(
      refused.stderr,
      new RegExp(
        `${victim
          .split('/')
          .pop()!
          .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not match its manifest \\(checksum differs\\)`,
      ),
      refused.stderr,
    );
    const keys = await listKeys(weed.client, 'pmtape-damaged');
    const folder = victim.slice(0, victim.lastIndexOf('/'));
    t.notOk(keys.includes(`d/${victim}`), 'the damaged object is not in the bucket');
    t.notOk(keys.includes(`d/${folder}/_manifest.json`), "no manifest of the damaged file's partition");
    t.notOk(
      keys.some((k) => k.includes('_archive/days/')),
      'no day record: the day is not visible',
    );
    const seen = await checkVisibleManifests(weed.client, 'pmtape-damaged', 'd/');
    t.same(seen.problems, [], `every other manifest visible (${seen.manifests.length}) names only files that are there, whole`);

    await writeFile(path, orig);
    const repaired = await archiveCli(['sync'], dataDir, weed.endpoint, url);
    t.equal(repaired.code, 0, repaired.stderr);
    t.match(repaired.summary, { days: 1, failed: 0 }, 'once the file is repaired, the day publishes');
    t.ok(orig.equals(await getObject(weed.client, 'pmtape-damaged', `d/${victim}`)), 'with the good bytes');
  });
}

if (bin) {
  t.test('upload() checks the bytes it reads: one PUT never sent, a multipart upload deleted again', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-refuse');
    const proxy = await startFaultProxy(weed.endpoint, 0);
    t.teardown(() => proxy.close());
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY });
    const s3 = archiveClient(useTestArchive('s3://pmtape-refuse', proxy.url));
    t.teardown(() => s3.destroy());
    const dir = mkdtempSync(join(tmpdir(), 'pmtape-refuse-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    for (const [name, size] of [
      ['small.parquet', 100_000],
      ['big.parquet', PART_SIZE + 5],
    ] as const) {
      const path = join(dir, name);
      const bytes = randomBytes(size);
      writeFileSync(path, bytes);
      const other = Buffer.from(bytes);
      other[7] ^= 1; // what the manifest says: the same size, other bytes
      const o = {
        key: name,
        path,
        size,
        sha256: createHash('sha256').update(other).digest('hex'),
        contentType: 'application/octet-stream',
      };
      const before = proxy.stats.log.length;
      await t.rejects(upload(s3, 'pmtape-refuse', o), { name: 'LocalMismatch', message: /big|small/ }, `${name}: refused`);
      t.notOk((await listKeys(weed.client, 'pmtape-refuse')).includes(name), `${name}: not in the bucket`);
      const puts = proxy.stats.log.slice(before).filter((l) => /^(PUT|POST) /.test(l));
      if (size <= PART_SIZE) t.same(puts, [], `${name}: one PUT's worth, checked before anything was sent`);
      else t.ok(puts.length > 0, `${name}: a multipart upload, checked while it was sent (${puts.length} writes), then deleted`);
    }
  });
}
