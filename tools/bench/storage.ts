// Storage benchmark (`npm run bench -- storage`): append throughput of realistic books against raw
// fs.write of the same bytes with the same fsync cadence, seek latency at 1e5/1e6/1e7 records in
// one day file, index size, and recovery time of a ~1 GB log with a torn tail.
// PMTAPE_BENCH_SCALE (default 1) shrinks every size; PMTAPE_BENCH_DIR picks the scratch folder.

import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeSync, appendFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import type { BookSnapshot, Trade } from '../../src/schema/observation.js';
import { utcDay } from '../../src/schema/time.js';
import { checkLogFile, logFilePath, openLogReader, openWriter, type LogKey } from '../../src/storage/index.js';
import { decodeRecord, encodeFrame, parseFrame, PREFIX_BYTES, writeI64 } from '../../src/storage/frame.js';
import { DEFAULT_INDEX_EVERY_BYTES, IndexEntries, encodeEntry } from '../../src/storage/time-index.js';

const SCALE = Number(process.env.PMTAPE_BENCH_SCALE ?? 1);
const DAY0 = Date.UTC(2026, 5, 1);
const log = (msg: string): void => {
  process.stderr.write(`bench storage: ${msg}\n`);
};
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

function book(recvTs: number, n: number, levels: number): BookSnapshot {
  const bids: [string, string][] = [];
  const asks: [string, string][] = [];
  for (let i = 0; i < levels; i++) {
    bids.push([(0.49 - i * 0.001).toFixed(3), (100 + ((n * 7 + i * 13) % 50000) / 7).toFixed(2)]);
    asks.push([(0.51 + i * 0.001).toFixed(3), (100 + ((n * 11 + i * 17) % 50000) / 7).toFixed(2)]);
  }
  return {
    type: 'book', recv_ts: recvTs, source_ts: recvTs - 12, units: 'decimal',
    token_id: '71321045679252212594626385532706912750332728571942532289631379312455583992563', bids, asks,
    hash: '0x5f2a3c9e1b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a',
  };
}

/** Appends `count` books through the real writer (default group commit), pipelined with backpressure. */
async function appendRun(dir: string, levels: number, count: number): Promise<{ seconds: number; bytes: number; path: string; encodeUs: number; cpuUs: number }> {
  const key: LogKey = { family: 'coin', stream: 'books', market: `append-${levels}` };
  const templates = Array.from({ length: 64 }, (_, i) => book(DAY0, i, levels));
  const w = await openWriter(dir, key);
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  let last: Promise<unknown> = Promise.resolve();
  for (let n = 0; n < count; n++) {
    last = w.append({ ...templates[n & 63], recv_ts: DAY0 + n, source_ts: DAY0 + n - 12 });
    if (w.backpressure) await w.drained();
  }
  await last;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await w.close();
  const path = logFilePath(dir, key, utcDay(DAY0));
  // Encoding cost alone (JSON + header + CRC), to show where append time goes.
  const t0 = process.hrtime.bigint();
  const k = Math.min(count, 20_000);
  for (let n = 0; n < k; n++) encodeFrame({ ...templates[n & 63], recv_ts: DAY0 + n }, n + 1, false);
  const encodeUs = Number(process.hrtime.bigint() - t0) / 1e3 / k;
  return { seconds, bytes: statSync(path).size, path, encodeUs, cpuUs: (cpu.user + cpu.system) / count };
}

/** Writes the same bytes with plain fs writes, one write + fdatasync per 1000 frames (the writer's cadence). */
async function rawRun(dir: string, source: string): Promise<number> {
  const bytes = readFileSync(source);
  const bounds: number[] = [0];
  for (let at = 0, k = 0; at < bytes.length; k++) {
    at += bytes.readUInt32LE(at) + PREFIX_BYTES;
    if ((k + 1) % 1000 === 0 || at >= bytes.length) bounds.push(at);
  }
  const fh = await open(join(dir, 'raw.log'), 'a');
  const start = process.hrtime.bigint();
  for (let i = 1; i < bounds.length; i++) {
    await fh.write(bytes, bounds[i - 1], bounds[i] - bounds[i - 1]);
    await fh.datasync();
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await fh.close();
  unlinkSync(join(dir, 'raw.log'));
  return seconds;
}

/**
 * Writes a one-day log of `count` small records directly (template frame, patched header, fresh
 * CRC) plus the index the writer's rule produces; far faster than appending 1e7 records.
 */
function generateLog(dir: string, key: LogKey, count: number): string {
  const path = logFilePath(dir, key, utcDay(DAY0));
  const step = Math.floor(86_400_000 / count);
  const trade: Trade = { type: 'trade', recv_ts: DAY0, source_ts: DAY0, token_id: 'tok-1', price: '0.53', size: '120.5', side: 'buy' };
  const template = encodeFrame(trade, 1, false);
  const size = template.length;
  const chunkFrames = Math.floor((4 << 20) / size);
  const chunk = Buffer.allocUnsafe(chunkFrames * size);
  const entries = new IndexEntries();
  const idxParts: Buffer[] = [];
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, 'w');
  let offset = 0;
  for (let n = 0; n < count; ) {
    const k = Math.min(chunkFrames, count - n);
    for (let j = 0; j < k; j++, n++) {
      const at = j * size;
      template.copy(chunk, at);
      const recvUs = (DAY0 + n * step) * 1000;
      writeI64(chunk, recvUs, at + 10);
      writeI64(chunk, recvUs - 5000, at + 18);
      writeI64(chunk, n + 1, at + 26);
      chunk.writeUInt32LE(crc32c(chunk.subarray(at + PREFIX_BYTES, at + size)), at + 4);
      const e = entries.consider({ offset, size, type: 5, flags: 1, recvUs, sourceUs: recvUs - 5000, seq: n + 1 }, DEFAULT_INDEX_EVERY_BYTES);
      if (e) idxParts.push(encodeEntry(e));
      offset += size;
    }
    writeSync(fd, chunk, 0, k * size);
  }
  closeSync(fd);
  const ifd = openSync(path.replace(/\.log$/, '.idx'), 'w');
  writeSync(ifd, Buffer.concat(idxParts));
  closeSync(ifd);
  return path;
}

const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function seekRun(dir: string, count: number, probes: number): Promise<{ p50: number; p99: number; idxPerRecord: number; path: string; key: LogKey }> {
  const key: LogKey = { family: 'coin', stream: 'metrics', market: `seek-${count}` };
  const path = generateLog(dir, key, count);
  const reader = openLogReader(dir, key);
  await reader.seekTime(DAY0); // loads the index into the cache, as a running server would have
  const span = Math.floor(86_400_000 / count) * (count - 1);
  const lat: number[] = [];
  for (let i = 0; i < probes; i++) {
    const tm = DAY0 + Math.floor(Math.random() * span);
    const t0 = process.hrtime.bigint();
    const p = await reader.seekTime(tm);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e3);
    if (!p) throw new Error(`seek ${tm} found nothing`);
  }
  lat.sort((a, b) => a - b);
  const idxBytes = statSync(path.replace(/\.log$/, '.idx')).size;
  return { p50: round(pct(lat, 50)), p99: round(pct(lat, 99)), idxPerRecord: round(idxBytes / count, 3), path, key };
}

/** Recovery of a big log whose tail is torn and whose index lags (as after kill -9 mid-batch). */
async function recoveryRun(dir: string, key: LogKey, path: string): Promise<{ ms: number; fullScanMs: number; gb: number }> {
  const bytes = statSync(path).size;
  const idxPath = path.replace(/\.log$/, '.idx');
  truncateSync(idxPath, Math.max(0, statSync(idxPath).size - 32 * 20)); // the index lags by 20 entries
  appendFileSync(path, Buffer.from([200, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3])); // a torn frame
  let t0 = process.hrtime.bigint();
  let w = await openWriter(dir, key);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await w.close();
  if (statSync(path).size !== bytes) throw new Error('recovery did not truncate the torn tail');
  // Worst case: no index at all, the whole log is scanned and the index rebuilt.
  unlinkSync(idxPath);
  appendFileSync(path, Buffer.from([200, 0, 0, 0, 9, 9, 9, 9, 1, 2, 3]));
  t0 = process.hrtime.bigint();
  w = await openWriter(dir, key);
  const fullScanMs = Number(process.hrtime.bigint() - t0) / 1e6;
  await w.close();
  const checks = await checkLogFile(path, { repair: false });
  if (!checks.every((c) => c.ok)) throw new Error(`recovered log fails verify: ${JSON.stringify(checks)}`);
  return { ms: round(ms), fullScanMs: round(fullScanMs), gb: round(bytes / 1e9, 2) };
}

export async function run(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(process.env.PMTAPE_BENCH_DIR ?? tmpdir(), 'pmtape-bench-storage-'));
  try {
    const out: Record<string, unknown> = { scale: SCALE };
    const only = (process.env.PMTAPE_BENCH_ONLY ?? 'append,seek,recovery').split(',');
    for (const levels of only.includes('append') ? [20, 100] : []) {
      const count = Math.max(1000, Math.round((levels === 20 ? 200_000 : 50_000) * SCALE));
      log(`append ${count} books of ${levels} levels`);
      const a = await appendRun(dir, levels, count);
      const rawSeconds = await rawRun(dir, a.path);
      const frame = readFileSync(a.path).subarray(0, 65536);
      const head = parseFrame(frame, 0, 0);
      const decodeUs = (() => {
        if (head.status !== 'ok') return null;
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < 5000; i++) decodeRecord(frame, 0, head.head);
        return round(Number(process.hrtime.bigint() - t0) / 1e3 / 5000, 2);
      })();
      out[`book${levels}`] = {
        records: count,
        bytes_per_record: Math.round(a.bytes / count),
        append_mb_per_s: round(a.bytes / 1e6 / a.seconds),
        append_records_per_s: Math.round(count / a.seconds),
        raw_write_mb_per_s: round(a.bytes / 1e6 / rawSeconds),
        append_vs_raw: round(rawSeconds / a.seconds, 2),
        encode_us_per_record: round(a.encodeUs, 2),
        // CPU time of this process per appended record (less sensitive to a busy machine than rates).
        append_cpu_us_per_record: round(a.cpuUs, 2),
        decode_us_per_record: decodeUs,
        index_bytes_per_record: round(statSync(a.path.replace(/\.log$/, '.idx')).size / count, 2),
      };
      rmSync(dirname(a.path), { recursive: true, force: true });
    }
    const b20 = out.book20 as Record<string, number> | undefined;
    if (b20) {
      out.append_mb_per_s = b20.append_mb_per_s;
      out.append_records_per_s = b20.append_records_per_s;
      out.raw_write_mb_per_s = b20.raw_write_mb_per_s;
      out.append_vs_raw = Math.min(b20.append_vs_raw, (out.book100 as Record<string, number>).append_vs_raw);
    }
    if (!only.includes('seek') && !only.includes('recovery')) return out;

    const seek: Record<string, unknown> = {};
    let big: { path: string; key: LogKey } | null = null;
    for (const n of only.includes('seek') ? [1e5, 1e6, 1e7] : [1e7]) {
      const count = Math.max(1000, Math.round(n * SCALE));
      log(`seek in a day file of ${count} records`);
      const s = await seekRun(dir, count, 5000);
      const mem = process.memoryUsage();
      seek[`n_${n.toExponential().replace('+', '')}`] = {
        records: count, seek_p50_us: s.p50, seek_p99_us: s.p99, index_bytes_per_record: s.idxPerRecord,
        heap_used_mb: round(mem.heapUsed / 1e6), rss_mb: round(mem.rss / 1e6),
      };
      if (big) rmSync(dirname(big.path), { recursive: true, force: true });
      big = s;
    }
    out.seek = seek;
    const vals = Object.values(seek) as Array<Record<string, number>>;
    out.seek_p99_ratio_largest_vs_smallest = round(vals[vals.length - 1].seek_p99_us / vals[0].seek_p99_us, 2);
    out.index_bytes_per_record = vals[vals.length - 1].index_bytes_per_record;
    if (!only.includes('recovery')) return out;

    log(`recovery of the largest log (${round(statSync(big!.path).size / 1e9, 2)} GB) with a torn tail`);
    const r = await recoveryRun(dir, big!.key, big!.path);
    out.recovery_log_gb = r.gb;
    out.recovery_ms = r.ms;
    out.recovery_without_index_ms = r.fullScanMs;
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
