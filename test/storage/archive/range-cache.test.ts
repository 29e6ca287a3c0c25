// The reader's disk range cache across restarts, against a real SeaweedFS: a second cache opened
// on the same folder (a restarted reader) serves a range the first one fetched without a GET; a
// torn write (a temporary file left by a kill) is deleted at start and never served; a smaller
// bound at start drops the oldest blocks; a replaced object (another sha256) is fetched again.

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { requireTool } from '../../helpers/toolchains.js';
import { RangeCache, RANGE_BLOCK } from '../../../src/storage/archive/range-cache.js';
import { startWeed } from '../../../tools/fixtures/weed.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('a restarted cache serves what it fetched before without a GET; torn files are dropped', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-cache');
    const body = randomBytes(5 * RANGE_BLOCK + 123);
    const sha = createHash('sha256').update(body).digest('hex');
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-cache', Key: 'obj', Body: body }));
    const dir = mkdtempSync(join(tmpdir(), 'pmtape-range-cache-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const [start, end] = [RANGE_BLOCK + 17, 3 * RANGE_BLOCK + 5];

    const first = await RangeCache.open(weed.client, 'pmtape-cache', dir, 1 << 30);
    t.same(Buffer.from(await first.read('obj', sha, body.length, start, end)), body.subarray(start, end), 'the range is right');
    t.equal(first.stats.requests, 1, 'one GET for a run of adjacent blocks');

    // A kill in the middle of a block's write leaves its temporary file, with a block's name inside.
    const torn = `${sha}-0.${process.pid}.tmp`;
    await writeFile(join(dir, torn), body.subarray(0, 100));
    const second = await RangeCache.open(weed.client, 'pmtape-cache', dir, 1 << 30);
    t.same(
      Buffer.from(await second.read('obj', sha, body.length, start, end)),
      body.subarray(start, end),
      'the same bytes after a restart',
    );
    t.equal(second.stats.requests, 0, 'the first read of a cached range after a restart makes no GET');
    t.equal(second.stats.hits, 3, 'its three blocks come from disk');
    t.notOk((await readdir(dir)).includes(torn), 'the torn temporary file was deleted at start');
    t.same(Buffer.from(await second.read('obj', sha, body.length, 0, 10)), body.subarray(0, 10), 'block 0 (only torn on disk) is right');
    t.equal(second.stats.requests, 1, 'and was fetched, not read from the torn file');

    // Restarted with room for two blocks: the oldest go at once.
    const small = await RangeCache.open(weed.client, 'pmtape-cache', dir, 2 * RANGE_BLOCK);
    t.ok(small.cachedBytes <= 2 * RANGE_BLOCK, `bounded at start (${small.cachedBytes} bytes)`);
    t.equal((await readdir(dir)).length, 2, 'the dropped blocks are deleted from disk');

    // Another object under the same key (another sha256) never gets the old bytes.
    const other = randomBytes(body.length);
    await weed.client.send(new PutObjectCommand({ Bucket: 'pmtape-cache', Key: 'obj', Body: other }));
    const sha2 = createHash('sha256').update(other).digest('hex');
    const third = await RangeCache.open(weed.client, 'pmtape-cache', dir, 1 << 30);
    t.same(Buffer.from(await third.read('obj', sha2, other.length, start, end)), other.subarray(start, end), 'the new bytes');
    t.equal(third.stats.requests, 1, 'fetched: blocks are named by content');
  });
}
