// The merge against a real SeaweedFS, from compacted fixture days published under recorder ids:
// shards with disjoint markets merge to their union (every market's books as the shard holding it
// had them, at every record time); kill -9 while the merge is merging, and again while it is
// publishing, leaves no canonical day visible to a reader, and the next run completes it.

import t from 'tap';
import { mkdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { tempDir } from '../../selfhost/helpers.js';

import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { mountArchive, openReader, unpublishedDays } from '../../../src/storage/index.js';
import { decodeMarket } from '../../../src/storage/paths.js';
import type { Family } from '../../../src/schema/observation.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { DAY, archiveCli, listKeys } from './common.js';
import { ACCESS_KEY, SECRET_KEY, startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { bookMarkets, booksPass, recorderCopy } from './merge-helpers.js';

t.setTimeout(900_000);
const bin = requireTool(t, 'seaweedfs');
const child = fileURLToPath(new URL('./merge-child.js', import.meta.url));

/** Runs the merge child to its end, or to its hold point and kills it there with SIGKILL. */
function runChild(args: string[], holdAt?: string): Promise<{ out: string; killed: boolean }> {
  return new Promise((res) => {
    const p = spawn(process.execPath, [child, ...args, ...(holdAt ? [holdAt] : [])], {
      env: { ...process.env, AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_EC2_METADATA_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (holdAt && out.includes(`hold ${holdAt}`)) p.kill('SIGKILL');
    });
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (_code, sig) => res({ out, killed: sig === 'SIGKILL' }));
  });
}

/** Keeps only the named markets' logs (every stream) of a data dir. */
if (bin) {
  t.test('disjoint shards merge to their union; kill -9 mid-merge leaves no day, the next run completes', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-merge-crash');
    const url = 's3://pmtape-merge-crash/shared';
    const archive = useTestArchive(url, weed.endpoint);
    const dir = tempDir(t, 'pmtape-merge-crash-');
    const whole = join(dir, 'whole');
    mkdirSync(whole);
    await writeFixture(whole, { days: [DAY], booksPerDay: 120, coinMarkets: 4, bothOutcomes: true, spanMs: 600_000 });
    // Shard 0: coin 50000 and 50001 and the other families; shard 1: coin 50002 and 50003.
    const inShard1 = (family: string, m: string): boolean => family === 'coin' && (m.startsWith('50002') || m.startsWith('50003'));
    const shards = { s0: join(dir, 's0'), s1: join(dir, 's1') };
    for (const [id, d] of Object.entries(shards)) {
      recorderCopy(whole, d, (f, m) => (id === 's1') === inShard1(f, m));
      await compactDay(d, DAY, { threads: 1 });
      const r = await syncArchive(d, { ...archive, recorderId: id });
      t.equal(r.failed, 0, `shard ${id} published under recorders/${id}`);
      t.same(await unpublishedDays(d, { ...archive, recorderId: id }), [], 'its lag (and retention) speak of its own prefix');
    }
    t.ok((await listKeys(weed.client, 'pmtape-merge-crash', 'shared/recorders/s0/_archive/days/')).length === 1);
    const mounted = async (): Promise<string[]> => {
      const m = await mountArchive(tempDir(t, 'pmtape-merge-mount-'), archive, 1 << 26);
      m.close();
      return [...m.days()];
    };

    const work = join(dir, 'work');
    mkdirSync(work);
    const args = [url, weed.endpoint, DAY, work];
    for (const holdAt of ['merged', 'object:5', 'object:30']) {
      const r = await runChild(args, holdAt);
      t.ok(r.killed, `killed at ${holdAt}: ${r.out.slice(-500)}`);
      t.same(
        await listKeys(weed.client, 'pmtape-merge-crash', 'shared/_archive/days/'),
        [],
        `no canonical day record after the kill at ${holdAt}`,
      );
      t.same(await mounted(), [], 'a reader sees no merged day');
    }
    t.ok((await listKeys(weed.client, 'pmtape-merge-crash', 'shared/parquet/')).length > 0, 'the killed runs had uploaded data files');
    const done = await runChild(args);
    t.match(done.out, /done \{"markets":\d+,"failed":0,"skipped":null\}/, done.out.slice(-1000));
    t.same(await mounted(), [DAY], 'the next run publishes the merged day');
    const v = await archiveCli(['verify', '--date', DAY], join(dir, 'none'), weed.endpoint, url);
    t.equal(v.code, 0, `the canonical day verifies: ${v.stderr}`);
    const again = await runChild(args);
    t.match(again.out, /"skipped":".* is already published/, 'a merged day is left alone without --replace');

    // The union: every market of both shards, each with the books its shard held, at every record time.
    const readerDir = tempDir(t, 'pmtape-merge-reader-');
    const m = await mountArchive(readerDir, archive, 1 << 26);
    t.teardown(() => m.close());
    const merged = bookMarkets(readerDir).sort();
    t.same(merged, bookMarkets(whole).sort(), "the merged day holds the union of the shards' markets");
    let compared = 0;
    const diffs: string[] = [];
    for (const fm of merged) {
      const [family, enc] = fm.split('/') as [Family, string];
      const key = { family, stream: 'books' as const, market: decodeMarket(enc)! };
      const src = inShard1(family, key.market) ? shards.s1 : shards.s0;
      const times: number[] = [];
      for await (const { rec } of openReader(src, key).read('start')) times.push(rec.recv_ts);
      const [pm, ps] = await Promise.all([booksPass(openReader(readerDir, key), times), booksPass(openReader(src, key), times)]);
      // From the merged day's first whole book on (the shard's first whole book: its entry).
      const first = pm.changes[0] ?? Infinity;
      for (const at of times) {
        if (at < first) continue;
        compared++;
        if (pm.at.get(at) !== ps.at.get(at)) diffs.push(`${fm} at ${at}`);
      }
    }
    t.ok(compared > 500, `${compared} instants compared`);
    t.same(diffs.slice(0, 5), [], "every market's books are its shard's");
  });
}
