// A stateless reader with `--live-from` stitches what spans the archive's end: a recorder host
// holds day D+1 in its logs only (its copy of day D retired: logs and Parquet gone), the archive
// holds day D, and the reader (an empty data dir with the archive mounted) answers requests that
// span both days — snapshots pages in both orders followed through every next_cursor, timeseries,
// replay — byte for byte as one server holding both days does (request ids aside). Forwarding such
// a request whole (the code before stitching) loses day D. With the live server down, a request
// that needs it is a 502 `upstream_unavailable` naming it, never a 500 nor a cut answer; one that
// breaks off mid-replay ends the stream with an `upstream_unavailable` error line. A live server
// without the reader's cursor secret is refused (502), never answered with repeats or holes.

import t from 'tap';
import { copyFileSync, cpSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { requireTool } from '../../helpers/toolchains.js';

import { DAY_MS, dayStartMs, utcDay } from '../../../src/schema/time.js';
import { startApi } from '../../../src/api/server.js';
import { mountArchive, syncArchive } from '../../../src/storage/index.js';
import { compactDay } from '../../../src/storage/compaction/compact-day.js';
import { keysFor, testConfig, tmpDataDir } from '../../api/helpers.js';
import { writeFixture } from '../../../tools/fixtures/compaction-logs.js';
import { startWeed, useTestArchive } from '../../../tools/fixtures/weed.js';

const bin = requireTool(t, 'seaweedfs');
const D = utcDay(Date.now() - 3 * DAY_MS);
const D1 = utcDay(Date.now() - 2 * DAY_MS);
const B = dayStartMs(D1)!; // the archive's end
const iso = (ms: number): string => new Date(ms).toISOString();
const FIXTURE = { days: [D, D1], booksPerDay: 200, bothOutcomes: true, spanMs: 600_000 };

/** Deletes every file of `day` under `dir` (logs `<day>.log`, partitions `date=<day>`) but the catalogue's. */
function retireDay(dir: string, day: string): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'catalog' || name === 'dataset=catalog') continue;
    if (name === `${day}.log` || name === `date=${day}`) rmSync(p, { recursive: true, force: true });
    else if (statSync(p).isDirectory()) retireDay(p, day);
  }
}

function copyInto(from: string, to: string, ...rel: string[]): void {
  mkdirSync(join(to, ...rel.slice(0, -1)), { recursive: true });
  copyFileSync(join(from, ...rel), join(to, ...rel));
}

interface Answer {
  status: number;
  body: string;
  via: string | null;
}

async function get(base: string, path: string, key: string): Promise<Answer> {
  const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await r.text()).replace(/"request_id":"[^"]*"/g, '"request_id":""');
  return { status: r.status, body, via: r.headers.get('x-pmtape-forwarded') };
}

/** Every page of `path`, following next_cursor (at most 40 pages). */
async function pages(base: string, path: string, key: string): Promise<Answer[]> {
  const out: Answer[] = [];
  let url = path;
  for (let i = 0; i < 40; i++) {
    const a = await get(base, url, key);
    out.push(a);
    if (a.status !== 200) break;
    const next = (JSON.parse(a.body) as { next_cursor: string | null }).next_cursor;
    if (next === null) break;
    url = `${path}&cursor=${encodeURIComponent(next)}`;
  }
  return out;
}

if (bin) {
  t.test('a reader stitches the archive and the live server into one answer', async (t) => {
    const weed = await startWeed(t, bin);
    await weed.createBucket('pmtape-stitch');
    const url = 's3://pmtape-stitch/s';
    const archive = useTestArchive(url, weed.endpoint);

    // One server holding both days: D compacted (and published), D+1 in its logs.
    const full = tmpDataDir(t);
    await writeFixture(full, FIXTURE);
    await compactDay(full, D, { threads: 1 });
    t.match(await syncArchive(full, archive), { days: 1, failed: 0 });
    const { paid } = await keysFor(full);
    const one = await startApi(testConfig(full, { port: 0 }), { logger: false });
    t.teardown(() => one.close());

    // The recorder host: the same records, its copy of D retired (the catalogue kept).
    const host = tmpDataDir(t);
    await writeFixture(host, FIXTURE);
    retireDay(host, D);
    copyInto(full, host, 'keys', 'keys.json');
    copyInto(full, host, 'api', 'cursor.secret');
    const live = await startApi(testConfig(host, { port: 0 }), { logger: false });
    t.teardown(() => live.close());

    // The reader: an empty data dir, the archive mounted, the host as its live server.
    const readerDir = tmpDataDir(t);
    copyInto(full, readerDir, 'keys', 'keys.json');
    copyInto(full, readerDir, 'api', 'cursor.secret');
    const mount = await mountArchive(readerDir, archive, 64 << 20);
    t.teardown(() => mount.close());
    t.same(mount.days(), [D], 'the archive holds day D');
    const liveUrl = live.url;
    const reader = await startApi(testConfig(readerDir, { port: 0 }), { logger: false, liveFrom: { url: liveUrl, archiveEnd: () => B } });
    t.teardown(() => reader.close());

    const span = `start_time=${iso(B - DAY_MS)}&end_time=${iso(B + DAY_MS)}`;
    const paged = [
      `/v3/wallet-prediction/w-1/snapshots?${span}&include_orderbook=true&limit=70`,
      `/v3/wallet-prediction/w-1/snapshots?${span}&include_orderbook=true&limit=45&order=desc`,
      `/v3/wallet-prediction/w-1/snapshots?include_orderbook=true&depth=3&outcome=Down&limit=1000`,
      `/v3/wallet-prediction/w-1/snapshots?${span}&limit=1000`,
      `/v3/yesno-exchange/KXBTC-26JUL-T1/snapshots?${span}&include_orderbook=true&limit=30`,
      `/v3/wallet-prediction/w-1/timeseries?metric=chance&${span}&limit=7`,
      `/v3/wallet-prediction/w-1/timeseries?metric=chance&limit=20&order=desc`,
      // A page that ends exactly at the archive's end (the probe decides its next_cursor).
      `/v3/wallet-prediction/w-1/timeseries?metric=chance&${span}&limit=20`,
    ];
    for (const path of paged) {
      const want = await pages(one.url, path, paid);
      const got = await pages(reader.url, path, paid);
      t.ok(want.length > 1 || (JSON.parse(want[0].body) as { data?: unknown[] }).data?.length, `the full server has data: ${path}`);
      t.same(
        got.map((a) => [a.status, a.body]),
        want.map((a) => [a.status, a.body]),
        `every page as one server holding both days answers it (${want.length} pages): ${path}`,
      );
      t.ok(
        got.some((a) => a.via === 'stitched'),
        `a page was stitched: ${path}`,
      );
    }
    // The live server alone lacks day D: forwarding whole (the old behaviour) would not do.
    const lost = await get(live.url, paged[0], paid);
    t.not(lost.body, (await get(one.url, paged[0], paid)).body, 'the live server alone answers without day D');

    const replays = [
      `/v3/replay?family=wallet-prediction&market_id=w-1&${span}&types=book,book_change,trade,gap`,
      `/v3/replay?family=wallet-prediction&market_id=w-1&${span}&types=metric`,
      `/v3/replay?family=yesno-exchange&ticker=KXBTC-26JUL-T1&${span}&types=book`,
      `/v3/replay?family=coin&market_id=50000,50001&${span}&types=book,trade,gap,book_snapshot_5_1m`,
    ];
    for (const path of replays) {
      const want = await get(one.url, path, paid);
      const got = await get(reader.url, path, paid);
      t.equal(got.status, 200, path);
      t.equal(got.via, 'stitched', `stitched: ${path}`);
      t.ok(want.body.split('\n').length > 10, `the replay has lines: ${path}`);
      t.equal(got.body, want.body, `the replay as one server answers it: ${path}`);
    }

    // A live server that does not share the reader's cursor secret cannot continue its pages: a
    // 502 saying so, never a page with repeated or missing items.
    const stranger = tmpDataDir(t);
    cpSync(host, stranger, { recursive: true });
    rmSync(join(stranger, 'api', 'cursor.secret'));
    const other = await startApi(testConfig(stranger, { port: 0 }), { logger: false });
    t.teardown(() => other.close());
    const misled = await startApi(testConfig(readerDir, { port: 0 }), {
      logger: false,
      liveFrom: { url: other.url, archiveEnd: () => B },
    });
    t.teardown(() => misled.close());
    for (const path of [paged[3], paged[1]]) {
      const refused = await get(misled.url, path, paid);
      t.equal(refused.status, 502, `502 without the shared secret: ${path}`);
      t.match(refused.body, /"code":"upstream_unavailable".*cursor\.secret/);
    }

    // The live server breaking off the rest of a replay: the stream ends with an error line saying
    // so (API.md §8), after lines that are exactly the first ones of the whole replay, and no end line.
    const cutter = createServer((req, res) => {
      void fetch(`${liveUrl}${req.url}`, { headers: { authorization: String(req.headers.authorization) } }).then(async (up) => {
        res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'text/plain' });
        const body = Buffer.from(await up.arrayBuffer());
        if (!req.url!.startsWith('/v3/replay')) return void res.end(body);
        res.write(body.subarray(0, body.length >> 1)); // half the rest, then the connection dies
        setImmediate(() => res.socket?.destroy());
      });
    });
    await new Promise<void>((ok) => cutter.listen(0, '127.0.0.1', ok));
    t.teardown(() => void cutter.close());
    const cutReader = await startApi(testConfig(readerDir, { port: 0 }), {
      logger: false,
      liveFrom: { url: `http://127.0.0.1:${(cutter.address() as AddressInfo).port}`, archiveEnd: () => B },
    });
    t.teardown(() => cutReader.close());
    const whole = (await get(one.url, replays[0], paid)).body.split('\n');
    const cut = await get(cutReader.url, replays[0], paid);
    const lines = cut.body.trimEnd().split('\n');
    const last = JSON.parse(lines.at(-1)!) as { type: string; error?: { code: string } };
    t.equal(last.type, 'error', 'the cut replay ends with an error line');
    t.equal(last.error?.code, 'upstream_unavailable');
    t.notOk(
      lines.some((l) => l.startsWith('{"type":"end"')),
      'and no end line',
    );
    t.same(lines.slice(0, -1), whole.slice(0, lines.length - 1), 'the lines before it are the replay as it is');
    const fromLive = lines.filter((l) => (/"receive_time":"([^"]+)"/.exec(l)?.[1] ?? '') >= iso(B));
    t.ok(fromLive.length > 0 && fromLive.length < lines.length - 1, 'lines of both parts came before the break');

    // The live server down: a page the archive cannot fill alone (its day D part ends short of the
    // limit), a descending page (it starts on the live side) and a replay are a 502 naming it,
    // never a page cut at the archive's end; what the archive answers alone still works.
    await live.close();
    for (const path of [paged[3], paged[1], replays[0]]) {
      const down = await get(reader.url, path, paid);
      t.equal(down.status, 502, `502: ${path}`);
      t.match(down.body, /"code":"upstream_unavailable"/);
      t.ok(down.body.includes(liveUrl), 'naming the live server');
    }
    const bounded = `/v3/wallet-prediction/w-1/snapshots?start_time=${iso(B - DAY_MS)}&end_time=${iso(B)}&limit=50`;
    const local = await get(reader.url, bounded, paid);
    t.equal(local.status, 200, 'the archived day is still answered');
    t.equal(local.body, (await get(one.url, bounded, paid)).body);
  });
}
