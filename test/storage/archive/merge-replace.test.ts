// `archive merge --replace` is atomic for readers, against a real SeaweedFS: a day merged from
// shard s0 alone is replaced by the merge of s0 and s1 (other objects, more markets), and the
// replacing merge is killed with SIGKILL while it uploads data files, while it uploads manifests
// and while it deletes the replaced day's objects. After every kill a reader finds either the old
// merged day or the new one, whole (`archive verify` passes, the markets mounted are the old set or
// the new set, the day record is one of the two), never a mix; the next run completes and leaves
// only the new day's objects in the bucket.

import t from 'tap';
import { mkdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';
import { tempDir } from '../../selfhost/helpers.js';

import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { syncArchive } from '../../../src/storage/archive/sync.js';
import { mountArchive } from '../../../src/storage/index.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { DAY, archiveCli, getObject, listKeys } from './common.js';
import { ACCESS_KEY, SECRET_KEY, startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';
import { bookMarkets, recorderCopy } from './merge-helpers.js';

t.setTimeout(900_000);
const bin = requireTool(t, 'seaweedfs');
const child = fileURLToPath(new URL('./merge-child.js', import.meta.url));
const BUCKET = 'pmtape-merge-replace';

/** Runs the merge child to its end, or to its hold point and kills it there with SIGKILL. */
function runChild(args: string[], env: NodeJS.ProcessEnv, holdAt?: string): Promise<{ out: string; killed: boolean }> {
  return new Promise((res) => {
    const p = spawn(process.execPath, [child, ...args, ...(holdAt ? [holdAt] : [])], {
      env: { ...process.env, ...env, AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_EC2_METADATA_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (holdAt && out.includes(`hold ${holdAt}\n`)) p.kill('SIGKILL');
    });
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (_code, sig) => res({ out, killed: sig === 'SIGKILL' }));
  });
}

if (bin) {
  t.test('a replaced merged day is the old one or the new one whatever kills the replacement', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket(BUCKET);
    const url = `s3://${BUCKET}/shared`;
    const archive = useTestArchive(url, weed.endpoint);
    const dir = tempDir(t, 'pmtape-merge-replace-');
    const whole = join(dir, 'whole');
    mkdirSync(whole);
    await writeFixture(whole, { days: [DAY], booksPerDay: 120, coinMarkets: 4, bothOutcomes: true, spanMs: 600_000 });
    // s1 records coin 50002 and 50003, s0 the rest.
    const inS1 = (family: string, m: string): boolean => family === 'coin' && (m.startsWith('50002') || m.startsWith('50003'));
    for (const id of ['s0', 's1']) {
      const d = join(dir, id);
      recorderCopy(whole, d, (family, m) => (id === 's1') === inS1(family, m));
      await compactDay(d, DAY, { threads: 1 });
      t.equal((await syncArchive(d, { ...archive, recorderId: id })).failed, 0, `${id} published`);
    }
    const work = join(dir, 'work');
    mkdirSync(work);
    const args = [url, weed.endpoint, DAY, work];
    const recKey = `shared/_archive/days/${DAY}.json`;
    const record = async (): Promise<string> => (await getObject(weed.client, BUCKET, recKey)).toString('utf8');
    const markets = async (): Promise<string[]> => {
      const d = tempDir(t, 'pmtape-merge-replace-reader-');
      const m = await mountArchive(d, archive, 1 << 26);
      m.close();
      return bookMarkets(d).sort();
    };
    const verifies = async (): Promise<string | null> => {
      const v = await archiveCli(['verify', '--date', DAY], join(dir, 'none'), weed.endpoint, url);
      return v.code === 0 ? null : v.stderr.slice(-800);
    };

    const first = await runChild(args, { PMTAPE_TEST_MERGE_RECORDERS: 's0' });
    t.match(first.out, /done \{"markets":\d+,"failed":0/, first.out.slice(-800));
    const oldRecord = await record();
    const oldMarkets = await markets();
    const allMarkets = bookMarkets(whole).sort();
    t.ok(oldMarkets.length > 0 && oldMarkets.length < allMarkets.length, `the old merged day holds s0's markets (${oldMarkets.length})`);

    const replace = { PMTAPE_TEST_MERGE_RECORDERS: 's0,s1', PMTAPE_TEST_MERGE_REPLACE: '1' };
    const seen = new Set<string>();
    for (const holdAt of ['object:3', 'object:30', 'object:45', 'delete:2']) {
      const r = await runChild(args, replace, holdAt);
      if (!r.killed) {
        t.comment(`the replacement never reached ${holdAt}: ${r.out.slice(-300)}`);
        continue;
      }
      const rec = await record();
      const now = await markets();
      const which = rec === oldRecord ? 'old' : 'new';
      seen.add(which);
      t.same(now, which === 'old' ? oldMarkets : allMarkets, `killed at ${holdAt}: a reader mounts the ${which} day, whole`);
      t.equal(await verifies(), null, `killed at ${holdAt}: the ${which} day verifies (its record, manifests and files agree)`);
    }
    t.same([...seen].sort(), ['new', 'old'], 'kills before the new day record left the old day; after it, the new one');

    const done = await runChild(args, replace);
    t.match(done.out, /done \{"markets":\d+,"failed":0/, done.out.slice(-800));
    t.same(await markets(), allMarkets, 'the next run completes the new day');
    t.equal(await verifies(), null, 'and it verifies');
    const rec = JSON.parse(await record()) as { partitions: { path: string; manifest?: string }[] };
    const named = new Set<string>();
    for (const p of rec.partitions) {
      const mKey = `shared/${p.path}/${p.manifest ?? '_manifest.json'}`;
      named.add(mKey);
      const m = JSON.parse((await getObject(weed.client, BUCKET, mKey)).toString('utf8')) as { files: { file: string }[] };
      for (const f of m.files) named.add(`shared/${p.path}/${f.file}`);
    }
    t.same(await listKeys(weed.client, BUCKET, 'shared/parquet/'), [...named].sort(), "only the new day's objects are left");
  });
}
