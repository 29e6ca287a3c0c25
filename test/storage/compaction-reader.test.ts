// The reader answers identically before and after compaction (and after the compacted logs are
// deleted): every LogReader operation on every market, cursors made before compaction included,
// and a time-bounded read decodes only the row groups it needs.

import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openReader, openWriter, listKeys } from '../../src/storage/testing.js';
import { compactDay } from '../../src/storage/compaction/compact-day.js';
import { deleteExpiredLogs } from '../../src/storage/compaction/retention.js';
import { listDays } from '../../src/storage/paths.js';
import { ParquetStore, parquetStore } from '../../src/storage/parquet/reader.js';
import { CompositeReader } from '../../src/storage/read/composite-reader.js';
import { openLogReader } from '../../src/storage/read/reader.js';
import { DAY_MS, dayStartMs, utcDay } from '../../src/schema/time.js';
import type { LogKey, LogReader, Position, ReadItem } from '../../src/storage/types.js';
import { writeFixture } from '../../tools/fixtures/compaction-logs.js';

const NOW = Date.now();
const days = [3, 2, 1].map((k) => utcDay(NOW - k * DAY_MS));

async function all(it: AsyncIterable<ReadItem>): Promise<ReadItem[]> {
  const out: ReadItem[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** What a client can observe: records and the seq/day of positions (offsets are opaque). */
const view = (xs: (ReadItem | null)[]) => xs.map((x) => (x ? { rec: x.rec, day: x.pos.day, seq: x.pos.seq } : null));
const pview = (p: Position | null) => (p ? { day: p.day, seq: p.seq } : null);

/** A battery of reads on one key, as a plain comparable object. */
async function observe(r: LogReader): Promise<Record<string, unknown>> {
  const everything = await all(r.read('start'));
  const o: Record<string, unknown> = {
    days: await r.days(),
    all: view(everything),
    backward: view(await all(r.readBackward('end'))),
    latest: view([await r.latest()]),
    latest_position: pview(await r.latestPosition()),
    first: view([await r.first()]),
  };
  const times = [
    dayStartMs(days[0])! - 5,
    dayStartMs(days[1])!,
    dayStartMs(days[1])! + 3_600_000 + 17,
    dayStartMs(days[2])! + 12 * 3_600_000,
    NOW + DAY_MS,
  ];
  for (const tm of times) {
    o[`seekTime ${tm}`] = pview(await r.seekTime(tm));
    o[`checkpoint ${tm}`] = view([await r.checkpointAtOrBefore(tm)]);
    const p = await r.seekTime(tm);
    if (p) {
      o[`read ${tm}`] = view(await all(r.read(p, { endTime: tm + 3_600_000, limit: 40 })));
      o[`back ${tm}`] = view(await all(r.readBackward(p, { startTime: tm - 2 * 3_600_000, limit: 40 })));
    }
  }
  for (const k of [0, Math.floor(everything.length / 3), everything.length - 1]) {
    if (!everything[k]) continue;
    o[`seekSeq ${k}`] = pview(await r.seekSeq(everything[k].pos.seq));
  }
  return o;
}

t.test('reads are identical before and after compaction and log deletion', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-creader-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFixture(dir, { days, booksPerDay: 1000, coinMarkets: 2 });
  // A live day as well: today stays in its log.
  const live = await openWriter(dir, { family: 'coin', stream: 'books', market: '50000' });
  await live.append({
    type: 'book',
    recv_ts: Date.now(),
    source_ts: null,
    token_id: '50000-up',
    units: 'decimal',
    bids: [['0.4', '1']],
    asks: [['0.6', '2']],
  });
  await live.close();

  const keys = await listKeys(dir);
  t.ok(keys.length >= 8);
  const before = new Map<string, Record<string, unknown>>();
  const cursors = new Map<string, Position[]>();
  for (const k of keys) {
    const r = openReader(dir, k);
    before.set(JSON.stringify(k), await observe(r));
    const items = await all(r.read('start'));
    cursors.set(
      JSON.stringify(k),
      [items[5]?.pos, items[Math.floor(items.length / 2)]?.pos].filter((p): p is Position => Boolean(p)),
    );
  }

  // Small part files, so partitions span several files and markets several row groups.
  for (const d of days) await compactDay(dir, d, { fileRows: 700 });
  const { readManifest, partitionDir } = await import('../../src/storage/parquet/manifest.js');
  t.ok((await readManifest(partitionDir(dir, 'coin', 'book_changes', days[1])))!.files.length >= 2, 'several part files in a partition');
  const ret = await deleteExpiredLogs(dir, Date.now(), 0);
  t.ok(ret.deleted.length > 10, `compacted logs deleted (${ret.deleted.length})`);
  t.same(ret.kept, []);
  const books: LogKey = { family: 'coin', stream: 'books', market: '50000' };
  t.same(await listDays(dir, books), [utcDay(Date.now())], 'only the live day keeps its log');

  for (const k of keys) {
    const r = openReader(dir, k);
    const after = await observe(r);
    t.same(after, before.get(JSON.stringify(k)), `same answers for ${k.family}/${k.stream}/${k.market}`);
  }

  t.test('a cursor position made on the log resumes at the same record from Parquet', async (t) => {
    for (const k of keys) {
      const r = openReader(dir, k);
      for (const pos of cursors.get(JSON.stringify(k)) ?? []) {
        const got = await all(r.read(pos, { limit: 3 }));
        t.equal(got[0]?.pos.seq, pos.seq, `${k.market} ${k.stream}: resumes at seq ${pos.seq}`);
      }
    }
  });

  t.test('follow replays compacted days from Parquet, then continues on the live log', async (t) => {
    const r = openReader(dir, books);
    const want = await all(r.read('start'));
    const ac = new AbortController();
    const got: ReadItem[] = [];
    for await (const it of r.follow('start', ac.signal)) {
      got.push(it);
      if (got.length === want.length) ac.abort();
    }
    t.same(view(got), view(want), 'every record once, in order, across Parquet days and the live day');
    const mid = want[Math.floor(want.length / 2)].pos;
    const ac2 = new AbortController();
    const from: ReadItem[] = [];
    for await (const it of r.follow(mid, ac2.signal)) {
      from.push(it);
      if (it.pos.seq === want[want.length - 1].pos.seq) ac2.abort();
    }
    t.equal(from[0].pos.seq, mid.seq, 'follow from a compacted position starts there');
    t.equal(from.length, want.length - Math.floor(want.length / 2));
  });

  t.test('the decoded row-group cache stays within its byte bound', async (t) => {
    const small = new ParquetStore(dir, 3_000_000);
    t.teardown(() => small.close());
    const r = new CompositeReader(dir, books, openLogReader(dir, books), small);
    const got = await all(r.read('start'));
    t.ok(got.length > 3000);
    t.ok(small.decodes >= 3, `${small.decodes} row groups decoded`);
    t.ok(small.cachedBytes > 0 && small.cachedBytes <= 3_000_000, `${small.cachedBytes} bytes cached`);
    t.same(view(got), view(await all(openReader(dir, books).read('start'))), 'same records through a small cache');
  });

  t.test('an hour-long read decodes only the row groups covering that hour', async (t) => {
    const store = parquetStore(dir);
    const r = openReader(dir, books);
    const from = dayStartMs(days[1])! + 6 * 3_600_000;
    store.close(); // start cold
    const decodesBefore = store.decodes;
    const p = await r.seekTime(from);
    const got = await all(r.read(p!, { endTime: from + 3_600_000 }));
    t.ok(got.length > 30, `${got.length} records in the hour`);
    t.ok(store.decodes - decodesBefore >= 1 && store.decodes - decodesBefore <= 2, `decoded ${store.decodes - decodesBefore} row groups`);
    const again = store.decodes;
    await all(r.read(p!, { endTime: from + 3_600_000 }));
    t.equal(store.decodes, again, 'a repeated read is served from the decoded-group cache');
  });
});

t.test('a read opens only the part files holding its market, and old manifests still read', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-creader-files-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = days[1];
  await writeFixture(dir, { days: [day], booksPerDay: 600, coinMarkets: 3 });
  const keys = (await listKeys(dir)).filter((k) => k.family === 'coin' && k.stream === 'books');
  const before = new Map<string, Record<string, unknown>>();
  for (const k of keys) before.set(k.market, await observe(openReader(dir, k)));
  // Part files small enough that a file is written after each market.
  await compactDay(dir, day, { fileRows: 500 });
  await deleteExpiredLogs(dir, Date.now(), 0);
  const { readManifest, partitionDir } = await import('../../src/storage/parquet/manifest.js');
  const { partFileOpens } = await import('../../src/storage/parquet/partition-files.js');
  const { writeFile } = await import('node:fs/promises');
  const datasets = ['book_changes', 'trades', 'gaps'] as const;
  const manifests = await Promise.all(datasets.map(async (d) => (await readManifest(partitionDir(dir, 'coin', d, day)))!));
  const changes = manifests[0];
  t.ok(changes.files.length >= 3, `${changes.files.length} book_changes part files`);
  t.ok(
    changes.files.every((f) => f.markets && f.markets.length >= 1),
    'every file lists its markets',
  );
  t.same([...new Set(changes.files.flatMap((f) => f.markets!))].sort(), keys.map((k) => k.market).sort(), 'together, every market');

  const store = parquetStore(dir);
  for (const k of keys) {
    store.close();
    const opens = partFileOpens.count;
    t.same(await observe(openReader(dir, k)), before.get(k.market), `${k.market}: same answers as from the logs`);
    const holding = manifests.reduce((a, m) => a + m.files.filter((f) => f.markets!.includes(k.market)).length, 0);
    const total = manifests.reduce((a, m) => a + m.files.length, 0);
    t.equal(partFileOpens.count - opens, holding, `${k.market}: opened the ${holding} of ${total} files that hold it`);
    t.ok(holding < total, `${k.market}: fewer than all`);
  }

  // A manifest written before files listed their markets: every file is opened, answers unchanged.
  for (const [i, d] of datasets.entries()) {
    const m = manifests[i];
    await writeFile(
      join(partitionDir(dir, 'coin', d, day), '_manifest.json'),
      JSON.stringify({ ...m, files: m.files.map(({ markets: _, ...f }) => f) }, null, 1),
    );
  }
  const k = keys[0];
  store.close();
  const opens = partFileOpens.count;
  t.same(await observe(openReader(dir, k)), before.get(k.market), 'without the lists: the same answers');
  t.equal(
    partFileOpens.count - opens,
    manifests.reduce((a, m) => a + m.files.length, 0),
    'and every file opened',
  );
  store.close();
});

t.test('verify notices a manifest whose market list differs from the footer', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pmtape-creader-verify-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const day = days[1];
  await writeFixture(dir, { days: [day], booksPerDay: 200, coinMarkets: 2 });
  await compactDay(dir, day);
  const { readManifest, partitionDir } = await import('../../src/storage/parquet/manifest.js');
  const { checkPartitions } = await import('../../src/storage/parquet/partition-check.js');
  const { writeFile } = await import('node:fs/promises');
  t.same(
    (await checkPartitions(dir, false)).filter((c) => !c.ok),
    [],
    'a fresh tree verifies',
  );
  const pdir = partitionDir(dir, 'coin', 'book_changes', day);
  const m = (await readManifest(pdir))!;
  await writeFile(
    join(pdir, '_manifest.json'),
    JSON.stringify({ ...m, files: m.files.map((f) => ({ ...f, markets: f.markets!.slice(1) })) }),
  );
  const bad = (await checkPartitions(dir, false)).filter((c) => !c.ok);
  t.equal(bad.length, 1, 'one file reported');
  t.match(bad[0].problem, /other markets than the footer/, String(bad[0].problem));
});
