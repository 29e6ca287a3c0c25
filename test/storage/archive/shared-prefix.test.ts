// Two recorders without ids publishing into one archive prefix would overwrite each other's days.
// Each day record names its writer (host and a fingerprint of its data dir): against a real
// SeaweedFS, a second data dir's `archive sync` of a day the first published is refused with a
// warning naming the fix and a `shared_prefix` count in its summary, and the bucket keeps the first
// recorder's day untouched; the first recorder syncing again is not refused, also from another path.

import t from 'tap';
import { rename, rm } from 'node:fs/promises';
import { requireTool } from '../../helpers/toolchains.js';
import { recorderWriter, type DayRecord } from '../../../src/storage/archive/layout.js';
import { startWeed } from '../../../tools/fixtures/weed.js';
import { DAY, archiveCli, compactedDay, getObject, localObjects } from './common.js';

const bin = requireTool(t, 'seaweedfs');

if (bin) {
  t.test("a second recorder without an id does not overwrite the first one's day", async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-shared');
    const url = 's3://pmtape-shared/tape';
    const a = await compactedDay(t);
    const b = await compactedDay(t, DAY, 240); // another recording of the same day
    const first = await archiveCli(['sync'], a, weed.endpoint, url);
    t.equal(first.code, 0, first.stderr);
    const rec = async (): Promise<DayRecord> =>
      JSON.parse((await getObject(weed.client, 'pmtape-shared', `tape/_archive/days/${DAY}.json`)).toString('utf8')) as DayRecord;
    t.same((await rec()).writer, await recorderWriter(a), 'the day record names its writer');

    const second = await archiveCli(['sync'], b, weed.endpoint, url);
    t.equal(second.code, 1, 'the second recorder is refused');
    t.match(second.summary, { days: 1, failed: 1, shared_prefix: 1 }, second.stdout);
    t.match(second.stderr, /warning: .*published by another recorder .*recorder_id/, 'a warning naming the fix');
    t.same((await rec()).writer, await recorderWriter(a), "the first recorder's day record stays");
    for (const [k, bytes] of await localObjects(a))
      if (k.endsWith('_manifest.json'))
        t.ok(bytes.equals(await getObject(weed.client, 'pmtape-shared', `tape/${k}`)), `${k} is still the first recorder's`);

    const again = await archiveCli(['sync', '--all'], a, weed.endpoint, url);
    t.equal(again.code, 0, `the first recorder publishing again is its own day: ${again.stderr}`);
    t.equal(again.summary.failed, 0);

    // The identity is the data dir's own (archive-state/writer-id), not its path or the host name:
    // the first recorder's data dir moved elsewhere (a new disk, a container with a new hostname)
    // still publishes its own day.
    const moved = `${a}-moved`;
    await rename(a, moved);
    t.teardown(() => rm(moved, { recursive: true, force: true }));
    const after = await archiveCli(['sync', '--all'], moved, weed.endpoint, url);
    t.equal(after.code, 0, `the moved data dir is the same recorder: ${after.stderr}`);
    t.equal(after.summary.shared_prefix ?? 0, 0);
    t.same((await recorderWriter(moved)).id, (await rec()).writer?.id, 'its id moved with it');
  });
}
