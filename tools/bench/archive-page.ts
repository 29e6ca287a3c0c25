// Part of `npm run bench -- archive`: a 1-hour snapshots page of one market of the compacted bench
// day (the wallet-prediction market, 60 levels a side) (the hour's pages, 1000 snapshots each, followed by their cursors), answered by `serve` on the
// host's data dir with its logs retired (the local side) and by a stateless reader on an empty data
// dir with the archive mounted (the bucket side), each a fresh process (cold), then asked again
// (warm). The reader reaches the bucket through the fault proxy at rate 0, which counts the bytes
// it passes on; the row groups the hour needs come from the local files' footers. Both sides must
// answer byte for byte the same (request ids aside), or the bench fails rather than time a wrong answer.

import { cp, mkdtemp, rm } from 'node:fs/promises';
import { openAsBlob } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParquetFile } from 'parquet-wasm';
import { createKey } from '../../src/api/plugins/keys.js';
import { dayStartMs } from '../../src/schema/time.js';
import { deleteExpiredLogs } from '../../src/storage/testing.js';
import { archiveEnv } from '../fixtures/weed.js';
import { startFaultProxy } from '../fixtures/fault-proxy.js';
import { startServe, stopServe } from './serve.js';

const HOUR = 3_600_000;
const log = (s: string): void => void process.stderr.write(`bench archive: ${s}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

interface Segment {
  readonly market: string;
  readonly rg: number;
  readonly minRecv: number;
  readonly maxRecv: number;
}

/** The hour's pages from `base`: time taken and the bodies with request ids blanked. */
async function hourPages(base: string, path: string, key: string): Promise<{ ms: number; body: string; pages: number; rows: number }> {
  const t0 = performance.now();
  const bodies: string[] = [];
  let rows = 0;
  let cursor: string | null = null;
  do {
    const r = await fetch(`${base}${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status} ${text.slice(0, 300)}`);
    const j = JSON.parse(text) as { data: unknown[]; next_cursor?: string | null };
    rows += j.data.length;
    bodies.push(text.replace(/"request_id":"[^"]*"/g, '"request_id":""'));
    cursor = j.next_cursor ?? null;
  } while (cursor);
  return { ms: performance.now() - t0, body: bodies.join('\n'), pages: bodies.length, rows };
}

/**
 * Compressed bytes of the row groups the hour [a, b) of `market` needs in the part files `rels`
 * (archive paths under `dataDir`): every column of each row group holding a segment of the market
 * that overlaps the hour, from the files' footers (`pmtape.segments`, the row groups' sizes).
 */
async function neededBytes(dataDir: string, rels: readonly string[], market: string, a: number, b: number): Promise<number> {
  let total = 0;
  for (const rel of rels) {
    const file = await ParquetFile.fromFile(await openAsBlob(join(dataDir, rel)));
    const md = file.metadata();
    const kv = md.fileMetadata().keyValueMetadata();
    const segs = JSON.parse(String(kv.get('pmtape.segments') ?? '[]')) as Segment[];
    const groups = new Set(segs.filter((s) => s.market === market && s.maxRecv >= a && s.minRecv < b).map((s) => s.rg));
    for (const rg of groups) total += md.rowGroup(rg).compressedSize();
    file.free();
  }
  return total;
}

export interface PageFigures {
  readonly [k: string]: unknown;
}

/**
 * Runs the comparison on `dataDir` (a compacted `day` published at `url` on the server at
 * `endpoint`, with the wallet-prediction market `market`: the fixture's coin markets name no coin), `rounds` rounds alternating which side goes first.
 */
export async function snapshotsPage(
  dataDir: string,
  day: string,
  endpoint: string,
  url: string,
  market: string,
  rounds: number,
): Promise<PageFigures> {
  const ret = await deleteExpiredLogs(dataDir, Date.now(), 0, url);
  log(`snapshots page: host's logs retired (${ret.deleted.length} deleted, ${ret.kept.length} kept)`);
  if (ret.deleted.length === 0 || ret.kept.length > 0) throw new Error(`the host's logs were not retired: ${JSON.stringify(ret.kept[0])}`);
  const a = dayStartMs(day)! + HOUR;
  const b = a + HOUR;
  const path = `/v3/wallet-prediction/${market}/snapshots?include_orderbook=true&start_time=${new Date(a).toISOString()}&end_time=${new Date(b).toISOString()}&limit=1000`;
  const key = (await createKey(dataDir, 'paid', 'bench')).key;
  const proxy = await startFaultProxy(endpoint, 0);
  const env = archiveEnv(proxy.url, url);
  const readers: string[] = [];
  const localCold: number[] = [];
  const localWarm: number[] = [];
  const bucketCold: number[] = [];
  const bucketWarm: number[] = [];
  const fetched: number[] = [];
  let files: string[] = [];
  let expected: string | null = null;
  let shape = { pages: 0, rows: 0 };
  // Cold then warm (median of three warm askings) in one fresh process; the body checked each time.
  const side = async (dir: string, extra: NodeJS.ProcessEnv, cold: number[], warm: number[], count: boolean): Promise<void> => {
    const { url: base, proc } = await startServe(dir, extra);
    try {
      const before = { bytes: proxy.stats.bytes, log: proxy.stats.log.length };
      const first = await hourPages(base, path, key);
      if (count) {
        fetched.push(proxy.stats.bytes - before.bytes);
        files = [
          ...new Set(
            proxy.stats.log
              .slice(before.log)
              .map((l) => /(parquet\/[^?]*\.parquet)/.exec(l)?.[1])
              .filter((x): x is string => x !== undefined),
          ),
        ];
      }
      const ws: number[] = [];
      for (let i = 0; i < 3; i++) {
        const again = await hourPages(base, path, key);
        if (again.body !== first.body) throw new Error(`${path}: a warm answer differs from the cold one`);
        ws.push(again.ms);
      }
      if (expected === null) {
        expected = first.body;
        shape = { pages: first.pages, rows: first.rows };
        if (first.rows === 0) throw new Error(`${path}: the hour holds no snapshots`);
      } else if (first.body !== expected) throw new Error(`${path}: the reader and the host answer differently`);
      cold.push(first.ms);
      warm.push(median(ws));
    } finally {
      await stopServe(proc);
    }
  };
  try {
    // The host makes its cursor secret on first start; readers share it, as behind a load balancer.
    const { proc } = await startServe(dataDir);
    await stopServe(proc);
    for (let i = 0; i < rounds; i++) {
      const reader = await mkdtemp(join(tmpdir(), 'pmtape-bench-reader-'));
      readers.push(reader);
      for (const d of ['api', 'keys']) await cp(join(dataDir, d), join(reader, d), { recursive: true }); // cursor secret, the key
      const order = i % 2 === 0 ? ['local', 'bucket'] : ['bucket', 'local'];
      for (const s of order)
        if (s === 'local') await side(dataDir, {}, localCold, localWarm, false);
        else await side(reader, env, bucketCold, bucketWarm, true);
      log(
        `page round ${i + 1}/${rounds}: local cold ${localCold[i].toFixed(0)} ms warm ${localWarm[i].toFixed(1)} ms; ` +
          `bucket cold ${bucketCold[i].toFixed(0)} ms warm ${bucketWarm[i].toFixed(1)} ms, ${fetched[i]} bytes fetched`,
      );
    }
    const needed = await neededBytes(dataDir, files, market, a, b);
    return {
      path,
      pages: shape.pages,
      snapshots: shape.rows,
      bodies_identical: true,
      local_cold_ms: round(median(localCold), 1),
      local_warm_ms: round(median(localWarm), 1),
      bucket_cold_ms: round(median(bucketCold), 1),
      bucket_warm_ms: round(median(bucketWarm), 1),
      bucket_cold_vs_local_cold: round(median(bucketCold.map((x, i) => x / localCold[i]))),
      bucket_warm_vs_local_warm: round(median(bucketWarm.map((x, i) => localWarm[i] / x))),
      files_read: files.length,
      bytes_fetched: median(fetched),
      row_group_bytes: needed,
      bytes_fetched_vs_row_groups: round(median(fetched) / needed),
      targets: { bucket_cold_vs_local_cold: '≤ 3', bucket_warm_vs_local_warm: '≥ 0.9', bytes_fetched_vs_row_groups: '≤ 2' },
    };
  } finally {
    await proxy.close();
    for (const r of readers) await rm(r, { recursive: true, force: true });
  }
}
