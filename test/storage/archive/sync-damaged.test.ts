// Publishing refuses a local data file whose bytes are not its manifest's (same size, so only the
// hash taken while it uploads can tell): the run fails naming the file, the object it sent is
// deleted again, no manifest or day record appears; once the file is repaired the day publishes.

import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { startWeed } from '../../../tools/fixtures/weed.js';
import { archiveCli, compactedDay, getObject, listKeys, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test('a local file unlike its manifest (same size) is refused while it uploads and never left in the bucket', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-damaged');
    const url = 's3://pmtape-damaged/d';
    const dataDir = await compactedDay(t);
    const local = await localObjects(dataDir);
    // The biggest data file: the hash is taken while it uploads, so the bytes reach the server first.
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
    t.notOk(keys.includes(`d/${victim}`), 'the damaged object was deleted again');
    t.notOk(
      keys.some((k) => k.endsWith('_manifest.json') || k.includes('_archive/days/')),
      'no manifest, no day record: nothing of the day is visible',
    );

    await writeFile(path, orig);
    const repaired = await archiveCli(['sync'], dataDir, weed.endpoint, url);
    t.equal(repaired.code, 0, repaired.stderr);
    t.match(repaired.summary, { days: 1, failed: 0 }, 'once the file is repaired, the day publishes');
    t.ok(orig.equals(await getObject(weed.client, 'pmtape-damaged', `d/${victim}`)), 'with the good bytes');
  });
}
