// Log stamps on real files: an append, a new day file, a truncate-and-rewrite to the same size,
// deleted logs and a Parquet publication each change the stamp; nothing changing keeps it equal.

import t from 'tap';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logStamp, openWriter, parquetStamp, sameStamp, type LogStamp } from '../../src/storage/index.js';
import { logFilePath } from '../../src/storage/paths.js';
import { parquetRoot } from '../../src/storage/parquet/manifest.js';
import type { LogKey } from '../../src/storage/types.js';

const KEY: LogKey = { family: 'coin', stream: 'metrics', market: 'm-1' };
const DAY0 = Date.parse('2026-07-01T12:00:00.000Z');
const DAY1 = Date.parse('2026-07-02T00:00:01.000Z');

async function append(dir: string, recvTs: number): Promise<void> {
  const w = await openWriter(dir, KEY);
  await w.append({ type: 'metric', metric: 'price', outcome: 'Up', value: 0.5, recv_ts: recvTs, source_ts: null });
  await w.close();
}

const stampOf = async (dir: string): Promise<LogStamp> => logStamp(dir, KEY, await parquetStamp(dir, KEY.family, KEY.stream));

t.test('what changes a log stamp, and what does not', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-log-stamp-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const none = await stampOf(dir);
  t.equal(none.day, null, 'no folder: no day');
  t.ok(sameStamp(none, await stampOf(dir)), 'nothing there, twice: the same stamp');

  await append(dir, DAY0);
  const a = await stampOf(dir);
  t.equal(a.day, '2026-07-01');
  t.notOk(sameStamp(none, a), 'the first record changes it');
  t.ok(sameStamp(a, await stampOf(dir)), 'no write in between: equal');

  await append(dir, DAY0 + 1000);
  const b = await stampOf(dir);
  t.equal(b.day, a.day);
  t.ok(b.size > a.size, 'an append grows the newest file');
  t.notOk(sameStamp(a, b), 'an append changes it');

  await append(dir, DAY1);
  const c = await stampOf(dir);
  t.equal(c.day, '2026-07-02', 'a new day file is the newest');
  t.notOk(sameStamp(b, c), 'a new day file changes it');

  // Same size, other bytes, written later (recovery truncating a torn tail, then a new record of the
  // same length): size alone would miss it; mtime does not. Wait until the clock is over a second
  // past the file's mtime, so the rewrite cannot land in the same timestamp tick even on a file
  // system that keeps whole seconds.
  const path = logFilePath(dir, KEY, '2026-07-02');
  const bytes = await readFile(path);
  while (Date.now() < c.mtimeMs + 1100) await new Promise((r) => setTimeout(r, 20));
  await writeFile(path, bytes);
  const d = await stampOf(dir);
  t.equal(d.size, c.size, 'same size');
  t.notOk(sameStamp(c, d), 'a rewrite of the same size changes it');

  await rm(join(dir, 'logs'), { recursive: true });
  const e = await stampOf(dir);
  t.equal(e.day, null, 'logs deleted (after compaction): no day');
  t.notOk(sameStamp(d, e), 'deleting the logs changes it');

  await mkdir(join(parquetRoot(dir), 'family=coin', 'dataset=metrics', 'date=2026-07-01'), { recursive: true });
  const f = await stampOf(dir);
  t.notOk(sameStamp(e, f), "a partition published in the stream's dataset folder changes it");
  t.ok(sameStamp(f, await stampOf(dir)), 'and then holds');
});
