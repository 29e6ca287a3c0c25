// LogChanges on real folders: an append, a new day file and a deleted log each notify the market's
// subscribers; a market without a folder is watched through its parent until the folder appears;
// a removed folder ends the subscription; watches are shared per folder and end with the last
// subscriber; past the limit `subscribe` says null instead of failing.

import t from 'tap';
import { appendFile, mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogChanges } from '../../src/storage/index.js';
import { logFilePath, marketDir } from '../../src/storage/paths.js';
import type { LogKey } from '../../src/storage/types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits (up to 10 s, no timing assumption) until `ok()`; the caller asserts afterwards. */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await sleep(10);
}

const KEY: LogKey = { family: 'coin', stream: 'books', market: 'm-1' };
const OTHER: LogKey = { family: 'coin', stream: 'books', market: 'm-2' };

async function tmp(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-log-changes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('appends, a new day file and a deleted log notify; watches are shared and released', async (t) => {
  const dataDir = await tmp(t);
  await mkdir(marketDir(dataDir, KEY), { recursive: true });
  const day1 = logFilePath(dataDir, KEY, '2026-07-01');
  await writeFile(day1, 'x');
  const changes = new LogChanges(dataDir);
  t.teardown(() => changes.close());
  let a = 0;
  let b = 0;
  const subA = changes.subscribe(KEY, () => a++)!;
  const subB = changes.subscribe(KEY, () => b++)!;
  t.ok(subA?.live && subB?.live, 'both subscribed');
  t.equal(changes.watched, 1, 'one watch for one folder');

  await appendFile(day1, 'more bytes');
  await until(() => a > 0 && b > 0);
  t.ok(a > 0 && b > 0, 'an append notifies every subscriber of the folder');

  a = 0;
  await writeFile(logFilePath(dataDir, KEY, '2026-07-02'), 'y');
  await until(() => a > 0);
  t.ok(a > 0, 'a new day file (rollover) notifies');

  a = 0;
  await unlink(day1);
  await until(() => a > 0);
  t.ok(a > 0, 'a deleted log (after compaction) notifies');
  t.ok(subA.live, 'the folder is still there: the subscription lives');

  subA.close();
  t.equal(changes.watched, 1, 'the folder stays watched while a subscriber is left');
  subB.close();
  t.equal(changes.watched, 0, 'the last close ends the watch');
});

t.test('a market without a folder is watched through its parent until the folder appears', async (t) => {
  const dataDir = await tmp(t);
  const changes = new LogChanges(dataDir);
  t.teardown(() => changes.close());
  let n = 0;
  const sub = changes.subscribe(KEY, () => n++);
  t.ok(sub?.live, 'subscribed although no folder of the market exists (the data dir is watched)');
  await mkdir(marketDir(dataDir, KEY), { recursive: true });
  await until(() => n > 0);
  t.ok(n > 0, 'the folder tree appearing notifies');
  t.notOk(sub!.live, 'the parent subscription ends so the subscriber re-subscribes');
  t.equal(changes.watched, 0, 'and its watch is released');

  let m = 0;
  const own = changes.subscribe(KEY, () => m++)!;
  await writeFile(logFilePath(dataDir, KEY, '2026-07-01'), 'x');
  await until(() => m > 0);
  t.ok(m > 0 && own.live, 're-subscribed to the market folder itself: a log file there notifies');

  await rm(marketDir(dataDir, KEY), { recursive: true, force: true });
  await until(() => !own.live);
  t.notOk(own.live, 'a removed folder ends the subscription');
  t.equal(changes.watched, 0);
});

t.test('past the folder limit subscribe answers null; a freed slot is used again', async (t) => {
  const dataDir = await tmp(t);
  for (const k of [KEY, OTHER]) await mkdir(marketDir(dataDir, k), { recursive: true });
  const changes = new LogChanges(dataDir, 1);
  t.teardown(() => changes.close());
  const first = changes.subscribe(KEY, () => undefined);
  t.ok(first?.live);
  t.ok(
    changes.subscribe(KEY, () => undefined),
    'the same folder shares the watch: no new slot needed',
  );
  t.equal(
    changes.subscribe(OTHER, () => undefined),
    null,
    'a second folder is over the limit',
  );
  changes.close();
  t.notOk(first!.live, 'close ends every subscription');
  t.ok(changes.subscribe(OTHER, () => undefined)?.live, 'after close a slot is free again');
});
