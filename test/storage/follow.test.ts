// Following a live log written by another process: every record once, in order, across the UTC
// midnight rollover and across a writer that is killed and restarted; positions resume exactly.

import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { openReader, openWriter, type LogKey, type ReadItem } from '../../src/storage/index.js';
import { mixed, trade } from './helpers/records.js';
import { helperPath, kill9, startNode } from './helpers/proc.js';

const MIDNIGHT = Date.UTC(2026, 6, 27);

/** Follows until `until` says stop (or a time limit), then aborts; returns what was seen. */
async function followUntil(
  dir: string,
  key: LogKey,
  from: Parameters<ReturnType<typeof openReader>['follow']>[0],
  until: (items: ReadItem[]) => boolean,
  ms = 30_000,
): Promise<ReadItem[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const seen: ReadItem[] = [];
  try {
    for await (const item of openReader(dir, key).follow(from, ac.signal)) {
      seen.push(item);
      if (until(seen)) break;
    }
  } finally {
    clearTimeout(timer);
  }
  return seen;
}

t.test('a reader follows a writer in another process: every record once, in order, across midnight', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-follow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const market = 'follow me';
  const key: LogKey = { family: 'coin', stream: 'books', market };
  const N = 400;
  // Start following before the log exists, then start the writer (1 ms apart, across midnight).
  const following = followUntil(dir, key, 'start', (s) => s.length >= N);
  const child = startNode(helperPath('writer-child.js'), [dir, market, String(MIDNIGHT - 200), String(N), '1', '2', '1']);
  t.teardown(() => kill9(child));
  const seen = await following;
  await child.exited;
  t.same(
    seen.map((x) => x.rec.seq),
    Array.from({ length: N }, (_, i) => i + 1),
    'seqs 1..N, once each, in order',
  );
  t.ok(
    seen.every((x) => isDeepStrictEqual((({ seq: _s, ...o }) => o)(x.rec), mixed(x.rec.recv_ts, x.rec.seq))),
    'contents as written',
  );
  t.same([...new Set(seen.map((x) => x.pos.day))], ['2026-07-26', '2026-07-27'], 'crossed into the next day file');
});

t.test('following continues across a writer killed with -9 and restarted, without duplicates', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-follow2-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const market = 'restart';
  const key: LogKey = { family: 'coin', stream: 'books', market };
  const first = startNode(helperPath('writer-child.js'), [dir, market, String(MIDNIGHT), '-1', '1', '2', '1']);
  t.teardown(() => kill9(first));
  await first.waitFor(/^ack 150$/);
  const r = openReader(dir, key);
  t.equal((await r.seekSeq(100))?.seq, 100, 'a reader caches the live file before the crash');
  let stopAfter = Infinity;
  const following = followUntil(dir, key, 'start', (s) => s[s.length - 1].rec.seq >= stopAfter);
  await kill9(first);
  const second = startNode(helperPath('writer-child.js'), [dir, market, String(MIDNIGHT), '100', '1', '2', '1']);
  t.teardown(() => kill9(second));
  const ready = Number((await second.waitFor(/^ready \d+$/)).split(' ')[1]);
  stopAfter = ready + 100;
  await second.waitFor(/^done/);
  const seen = await following;
  const stored: number[] = [];
  for await (const it of openReader(dir, key).read('start')) stored.push(it.rec.seq);
  t.same(
    seen.map((x) => x.rec.seq),
    stored,
    'the follower saw exactly the stored records, in order',
  );
  t.equal(stored[stored.length - 1], ready + 100);
  t.equal((await r.latest())?.rec.seq, ready + 100, 'the same reader sees the recovered and continued log');
  t.equal((await r.seekSeq(ready + 1))?.seq, ready + 1, 'and seeks into it');
});

t.test('follow from the end sees only new records; from a position resumes after it exactly', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmtape-follow3-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key: LogKey = { family: 'coin', stream: 'metrics', market: 'x' };
  const w = await openWriter(dir, key, { fsyncIntervalMs: 1 });
  t.teardown(() => w.close());
  for (let i = 1; i <= 20; i++) await w.append(trade(MIDNIGHT + i, i));
  const fromEnd = followUntil(dir, key, 'end', (s) => s.length >= 5);
  await new Promise((r) => setTimeout(r, 150));
  for (let i = 21; i <= 25; i++) await w.append(trade(MIDNIGHT + i, i));
  t.same(
    (await fromEnd).map((x) => x.rec.seq),
    [21, 22, 23, 24, 25],
  );
  const pos = (await openReader(dir, key).seekSeq(10))!;
  const resumed = await followUntil(dir, key, pos, (s) => s.length >= 16);
  t.same(
    resumed.map((x) => x.rec.seq),
    Array.from({ length: 16 }, (_, i) => 10 + i),
    'starts at the position and runs to the tail',
  );
  const ahead = followUntil(dir, key, { day: '2026-07-27', offset: 0, seq: 27 }, (s) => s.length >= 1);
  await w.append(trade(MIDNIGHT + 26, 26));
  await w.append(trade(MIDNIGHT + 27, 27));
  t.same(
    (await ahead).map((x) => x.rec.seq),
    [27],
    'a position past the end waits for its seq',
  );
  const ac = new AbortController();
  const it = openReader(dir, key).follow('end', ac.signal)[Symbol.asyncIterator]();
  const next = it.next();
  ac.abort();
  t.same(await next, { value: undefined, done: true }, 'aborting ends an idle follow');
});
