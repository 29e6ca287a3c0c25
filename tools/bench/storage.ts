// Storage benchmark (`npm run bench -- storage`): append throughput of realistic books (append() and
// appendMany()) against raw fs.write of the same bytes with the writer's own fsync cadence, seek
// latency at 1e5/1e6/1e7 records in one day file, index size, and recovery time of a ~1 GB log.
// PMTAPE_BENCH_SCALE (default 1) shrinks every size; PMTAPE_BENCH_DIR picks the scratch folder;
// PMTAPE_BENCH_ONLY=append,seek,recovery picks parts; PMTAPE_BENCH_GROUP sets appendMany's size (64);
// PMTAPE_BENCH_REPEAT the append runs per figure (3, best kept for append and raw alike).

import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeSync,
  appendFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32c } from '@node-rs/crc32';
import type { BookSnapshot, Trade } from '../../src/schema/observation.js';
import { utcDay } from '../../src/schema/time.js';
import {
  checkLogFile,
  decodeRecord,
  DEFAULT_INDEX_EVERY_BYTES,
  encodeEntry,
  encodeFrame,
  encodeFrameAt,
  FILE_HEADER_BYTES,
  IndexEntries,
  logFilePath,
  openLogReader,
  openWriter,
  parseFrame,
  PREFIX_BYTES,
  writeI64,
  type LogKey,
} from '../../src/storage/testing.js';

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
    type: 'book',
    recv_ts: recvTs,
    source_ts: recvTs - 12,
    units: 'decimal',
    token_id: '71321045679252212594626385532706912750332728571942532289631379312455583992563',
    bids,
    asks,
    hash: '0x5f2a3c9e1b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a',
  };
}

interface AppendRun {
  seconds: number;
  cpuUs: number;
  bytes: number;
  path: string;
  /** Log bytes of each group commit (one fdatasync each), as the writer reported them. */
  commits: number[];
}

/**
 * Appends `count` books through the real writer (default group commit), pipelined with
 * backpressure: one `write` per record when `group` is 0, else `writeMany` of `group` records.
 * The observations are built before the clock starts: what is timed is the writer alone.
 */
async function appendRun(dir: string, levels: number, count: number, group: number, rep: number): Promise<AppendRun> {
  const key: LogKey = { family: 'coin', stream: 'books', market: `append-${levels}-${group}-${rep}` };
  const templates = Array.from({ length: 64 }, (_, i) => book(DAY0, i, levels));
  const obs: BookSnapshot[] = [];
  for (let n = 0; n < count; n++) obs.push({ ...templates[n & 63], recv_ts: DAY0 + n, source_ts: DAY0 + n - 12 });
  const groups: BookSnapshot[][] = [];
  if (group > 0) for (let n = 0; n < count; n += group) groups.push(obs.slice(n, n + group));
  const commits: number[] = [];
  const w = await openWriter(dir, key, { onCommit: (bytes) => commits.push(bytes) });
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  let last: Promise<unknown> = Promise.resolve();
  if (group === 0) {
    for (let n = 0; n < count; n++) {
      last = w.write(obs[n]);
      if (w.backpressure) await w.drained();
    }
  } else {
    for (const g of groups) {
      last = w.writeMany(g);
      if (w.backpressure) await w.drained();
    }
  }
  await last;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await w.close();
  const path = logFilePath(dir, key, utcDay(DAY0));
  return { seconds, cpuUs: (cpu.user + cpu.system) / count, bytes: statSync(path).size, path, commits };
}

/** Encoding cost alone (payload + header + CRC into a reused buffer, as the writer does). */
function encodeUs(levels: number): number {
  const templates = Array.from({ length: 64 }, (_, i) => book(DAY0, i, levels));
  const arena = {
    buf: Buffer.allocUnsafe(1 << 22),
    used: 0,
    ensure(size: number): void {
      if (this.buf.length - this.used < size) this.used = 0;
    },
  };
  const k = 20_000;
  const t0 = process.hrtime.bigint();
  for (let n = 0; n < k; n++) {
    const size = encodeFrameAt(arena, templates[n & 63], n + 1, false); // may reset arena.used
    arena.used += size;
  }
  return Number(process.hrtime.bigint() - t0) / 1e3 / k;
}

/**
 * The baseline: the same log bytes written with plain fs writes, one write + one fdatasync per
 * group commit the writer made (the same cadence; the writer also writes its index, this does not).
 */
async function rawRun(dir: string, source: string, commits: readonly number[]): Promise<number> {
  const bytes = readFileSync(source);
  // The writer's first commit also carries the day file's header, which commit sizes leave out.
  const header = bytes.length - commits.reduce((a, b) => a + b, 0);
  if (header !== 0 && header !== FILE_HEADER_BYTES) throw new Error('commit sizes do not add up to the log');
  const fh = await open(join(dir, 'raw.log'), 'a');
  const start = process.hrtime.bigint();
  let at = 0;
  for (const [i, commit] of commits.entries()) {
    const n = i === 0 ? commit + header : commit;
    let done = 0;
    while (done < n) done += (await fh.write(bytes, at + done, n - done)).bytesWritten;
    await fh.datasync();
    at += n;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await fh.close();
  unlinkSync(join(dir, 'raw.log'));
  return seconds;
}

/**
 * Append runs, each followed by a raw replay of its bytes and cadence (so both see the same machine
 * load); the best of `reps` for each side, so a busy moment slows neither the figure nor the baseline.
 */
async function appendVsRaw(
  dir: string,
  levels: number,
  count: number,
  group: number,
  reps: number,
): Promise<{ figures: Record<string, number>; frame: Buffer; bytes: number; indexBytes: number }> {
  let best = null as AppendRun | null;
  let rawSeconds = Infinity;
  let frame = Buffer.alloc(0);
  let indexBytes = 0;
  for (let rep = 0; rep < reps; rep++) {
    const a = await appendRun(dir, levels, count, group, rep);
    rawSeconds = Math.min(rawSeconds, await rawRun(dir, a.path, a.commits));
    const cpuUs = Math.min(a.cpuUs, best ? best.cpuUs : Infinity);
    if (!best || a.seconds < best.seconds) best = a;
    best.cpuUs = cpuUs;
    frame = Buffer.from(readFileSync(a.path).subarray(0, 65536));
    indexBytes = statSync(a.path.replace(/\.log$/, '.idx')).size;
    rmSync(dirname(a.path), { recursive: true, force: true });
  }
  const a = best!;
  return {
    frame,
    bytes: a.bytes,
    indexBytes,
    figures: {
      ...(group > 0 ? { group } : {}),
      append_mb_per_s: round(a.bytes / 1e6 / a.seconds),
      append_records_per_s: Math.round(count / a.seconds),
      raw_write_mb_per_s: round(a.bytes / 1e6 / rawSeconds),
      append_vs_raw: round(rawSeconds / a.seconds, 2),
      // CPU time of this process per appended record (less sensitive to a busy machine than rates).
      append_cpu_us_per_record: round(a.cpuUs, 2),
      fsyncs: a.commits.length,
    },
  };
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
  for (let n = 0; n < count;) {
    const k = Math.min(chunkFrames, count - n);
    for (let j = 0; j < k; j++, n++) {
      const at = j * size;
      template.copy(chunk, at);
      const recvUs = (DAY0 + n * step) * 1000;
      writeI64(chunk, recvUs, at + 10);
      writeI64(chunk, recvUs - 5000, at + 18);
      writeI64(chunk, n + 1, at + 26);
      chunk.writeUInt32LE(crc32c(chunk.subarray(at + PREFIX_BYTES, at + size)), at + 4);
      const e = entries.consider(
        { offset, size, type: 5, flags: 1, recvUs, sourceUs: recvUs - 5000, seq: n + 1 },
        DEFAULT_INDEX_EVERY_BYTES,
      );
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

async function seekRun(
  dir: string,
  count: number,
  probes: number,
): Promise<{ p50: number; p99: number; idxPerRecord: number; path: string; key: LogKey }> {
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
    const group = Number(process.env.PMTAPE_BENCH_GROUP ?? 64);
    const reps = Math.max(1, Number(process.env.PMTAPE_BENCH_REPEAT ?? 3));
    for (const levels of only.includes('append') ? [20, 100] : []) {
      const count = Math.max(1000, Math.round((levels === 20 ? 200_000 : 50_000) * SCALE));
      log(`append ${count} books of ${levels} levels, one write() each (best of ${reps})`);
      const one = await appendVsRaw(dir, levels, count, 0, reps);
      log(`append ${count} books of ${levels} levels, writeMany() of ${group} (best of ${reps})`);
      const many = await appendVsRaw(dir, levels, count, group, reps);
      const { frame, bytes, indexBytes } = one;
      const head = parseFrame(frame, 0, 0);
      const decodeUs = (() => {
        if (head.status !== 'ok') return null;
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < 5000; i++) decodeRecord(frame, 0, head.head);
        return round(Number(process.hrtime.bigint() - t0) / 1e3 / 5000, 2);
      })();
      out[`book${levels}`] = {
        records: count,
        bytes_per_record: Math.round(bytes / count),
        // Per-record write() (the headline) and writeMany() of `group` records per call (append/appendMany without the Recorded handed back: what the recorders call).
        ...one.figures,
        append_many: many.figures,
        encode_us_per_record: round(encodeUs(levels), 2),
        decode_us_per_record: decodeUs,
        index_bytes_per_record: round(indexBytes / count, 2),
      };
    }
    const b20 = out.book20 as Record<string, number> | undefined;
    const b100 = out.book100 as Record<string, number> | undefined;
    if (b20 && b100) {
      const many = (b: Record<string, unknown>): Record<string, number> => b.append_many as Record<string, number>;
      out.append_mb_per_s = b20.append_mb_per_s;
      out.append_records_per_s = b20.append_records_per_s;
      out.raw_write_mb_per_s = b20.raw_write_mb_per_s;
      // Headline: the worse of 20 and 100 levels for one write() per record (what recorders call).
      out.append_vs_raw = Math.min(b20.append_vs_raw, b100.append_vs_raw);
      out.append_many_vs_raw = Math.min(many(b20).append_vs_raw, many(b100).append_vs_raw);
      out.headline =
        'append_vs_raw: per-record write() (append without the Recorded handed back), worst of 20/100 levels; raw replays the same bytes and fsync cadence';
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
        records: count,
        seek_p50_us: s.p50,
        seek_p99_us: s.p99,
        index_bytes_per_record: s.idxPerRecord,
        heap_used_mb: round(mem.heapUsed / 1e6),
        rss_mb: round(mem.rss / 1e6),
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
