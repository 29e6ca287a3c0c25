// `pmtape compact` and the partition checks of `pmtape verify`, run as real CLI processes on a real
// data dir: dry run changes nothing, bad dates are refused, --all compacts every closed day, and
// verify exits 1 on a damaged, unlisted or manifest-less partition file.

import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, open, readdir, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const run = async (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
  try {
    const r = await promisify(execFile)(process.execPath, [cli, ...args], { env: { ...process.env, PMTAPE_LOG_LEVEL: 'silent' } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
};

const d2 = utcDay(Date.now() - 2 * DAY_MS);
const d3 = utcDay(Date.now() - 3 * DAY_MS);

t.test('compact and verify on the command line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-compact-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days: [d3, d2], booksPerDay: 100 });

  // Every path of the data dir with its size and mtime: writing the logs also journals their day
  // files (_coverage/), so "nothing written" is the same tree before and after, not a fixed listing.
  const tree = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const rel of (await readdir(dir, { recursive: true })).sort()) {
      const st = await stat(join(dir, rel));
      out.push(`${rel} ${st.size} ${st.mtimeMs}`);
    }
    return out;
  };
  const before = await tree();
  const dry = await run(['compact', '--all', '--dry-run', '--data-dir', dir]);
  t.equal(dry.code, 0);
  t.match(dry.stdout, new RegExp(`would-write family=coin/dataset=book_changes/date=${d3} rows=\\d+`));
  t.same(await tree(), before, 'a dry run writes nothing');
  t.notOk((await readdir(dir)).includes('parquet'), 'no Parquet tree');

  const bad = await run(['compact', '--date', '2026-13-45', '--data-dir', dir]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--date must be a UTC day/);

  const all = await run(['compact', '--all', '--data-dir', dir]);
  t.equal(all.code, 0, all.stderr);
  t.match(all.stdout, new RegExp(`written family=coin/dataset=book_changes/date=${d2}`));
  t.match(all.stdout, new RegExp(`written family=yesno-exchange/dataset=book_changes/date=${d3}`));
  t.notMatch(all.stdout, /deleted/, 'logs inside the retention period are kept');
  t.match(all.stderr, /compact: 2\/2 done/, 'plain progress lines when not on a TTY');

  const ok = await run(['verify', '--data-dir', dir]);
  t.equal(ok.code, 0, ok.stdout);
  t.match(ok.stdout, /no damage/);

  const pdir = join(dir, 'parquet', 'family=coin', 'dataset=book_changes', `date=${d2}`);
  const file = join(pdir, `book_changes-${d2}-0000.parquet`);
  const fh = await open(file, 'r+');
  await fh.write(Buffer.from([0x42]), 0, 1, 200);
  await fh.close();
  const damaged = await run(['verify', '--data-dir', dir]);
  t.equal(damaged.code, 1);
  t.match(
    damaged.stdout,
    new RegExp(`damaged: .*book_changes-${d2}-0000\\.parquet: sha256 differs from the manifest; run \`pmtape compact --date ${d2}\``),
  );

  await writeFile(join(pdir, 'stray.parquet'), 'x');
  await unlink(join(dir, 'parquet', 'family=coin', 'dataset=metrics', `date=${d2}`, '_manifest.json'));
  const more = await run(['verify', '--data-dir', dir]);
  t.match(more.stdout, /stray\.parquet: not listed in the manifest/);
  t.match(more.stdout, /_manifest\.json: missing: data file\(s\) without a manifest/);

  // The fix the message names: the logs are still there, so a rerun rebuilds both partitions.
  await unlink(join(pdir, 'stray.parquet'));
  const fixd = await run(['compact', '--date', d2, '--data-dir', dir]);
  t.match(fixd.stdout, new RegExp(`written family=coin/dataset=book_changes/date=${d2}`));
  t.match(fixd.stdout, new RegExp(`written family=coin/dataset=metrics/date=${d2}`));
  t.equal((await run(['verify', '--data-dir', dir])).code, 0);
});
