// What the redundant-recorder tests share: a fake clock for real `pmtape` processes (libfaketime
// moves every child three days back, so the day they record is closed for compaction and merge
// run on the real clock), a books-at-instants pass over a log view, and a recorder's uncovered
// spans computed with the coverage route's own gap rule (api/query/coverage.ts's GapScanner).

import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { MarketBooks } from '../../../src/book/book-state.js';
import { GapScanner } from '../../../src/api/query/coverage.js';
import type { Recorded } from '../../../src/schema/observation.js';
import { DAY_MS, dayStartMs, utcDay } from '../../../src/schema/time.js';
import type { LogReader } from '../../../src/storage/types.js';
import { decodeMarket } from '../../../src/storage/paths.js';
import type { ArchiveConfig } from '../../../src/config.js';
import { mergeDay, type MergeResult } from '../../../src/storage/merge/merge.js';

const LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * Merges `day` of `archive` on `threads` threads (replacing the canonical day) and keeps the merged
 * day's compacted tree as it stood before publication in `dir/merged-<threads>` (the merge removes
 * its scratch folder once published).
 */
export async function mergeKeepingDay(
  archive: ArchiveConfig,
  day: string,
  dir: string,
  threads: number,
): Promise<{ kept: string; result: MergeResult }> {
  const work = join(dir, `work-${threads}`);
  const kept = join(dir, `merged-${threads}`);
  mkdirSync(work);
  const result = await mergeDay(archive, day, {
    threads,
    replace: true,
    workDir: work,
    onPhase: (p) => {
      if (p === 'compacted') cpSync(join(work, readdirSync(work)[0], 'out'), kept, { recursive: true });
    },
  });
  return { kept, result };
}

/** libfaketime's path, or null (the test then fails under CI and skips elsewhere, saying why). */
export function requireFaketime(t: Test): string | null {
  if (existsSync(LIB)) return LIB;
  const why = `libfaketime is not installed (${LIB}): apt-get install faketime`;
  if (process.env.CI) t.fail(why);
  else t.pass('libfaketime', { skip: why });
  return null;
}

/**
 * One recorder's copy of a fixture tree: `whole` copied to `dir` with the logs of every market
 * `keep` refuses removed (so recorders hold overlapping or disjoint sets of markets).
 */
export function recorderCopy(whole: string, dir: string, keep: (family: string, market: string) => boolean): void {
  cpSync(whole, dir, { recursive: true });
  for (const family of readdirSync(join(dir, 'logs')))
    for (const stream of readdirSync(join(dir, 'logs', family)))
      for (const m of readdirSync(join(dir, 'logs', family, stream)))
        if (!keep(family, decodeMarket(m)!)) rmSync(join(dir, 'logs', family, stream, m), { recursive: true, force: true });
}

export interface FakeClock {
  /** The recorded (closed) UTC day. */
  readonly day: string;
  /** The env that puts a child on the fake clock. */
  readonly env: NodeJS.ProcessEnv;
  /** Now on the children's clock. */
  now(): number;
}

/** Children run at 12:00 UTC (plus elapsed time) three days ago. */
export function fakeClock(lib: string): FakeClock {
  const day = utcDay(Date.now() - 3 * DAY_MS);
  const offsetS = Math.round((Date.now() - (dayStartMs(day)! + 12 * 3_600_000)) / 1000);
  return {
    day,
    env: { LD_PRELOAD: lib, FAKETIME: `-${offsetS}`, FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    now: () => Date.now() - offsetS * 1000,
  };
}

/** Bytes of every day log under a data dir (a recorder's progress, to wait on). */
export function logBytes(dir: string): number {
  let n = 0;
  const walk = (d: string): void => {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      const p = join(d, name);
      if (name.endsWith('.log')) n += statSync(p).size;
      else if (!name.includes('.')) walk(p);
    }
  };
  walk(join(dir, 'logs'));
  return n;
}

/** Book markets (family/market) with a log folder in a data dir. */
export function bookMarkets(dir: string): string[] {
  const out: string[] = [];
  for (const family of ['coin', 'wallet-prediction', 'yesno-exchange']) {
    try {
      for (const m of readdirSync(join(dir, 'logs', family, 'books'))) out.push(`${family}/${m}`);
    } catch {
      // no such family recorded
    }
  }
  return out;
}

/** The books of a market as one comparable text: every valid token's ladders, or the yes/no book. */
function stateText(b: MarketBooks, yesno: Recorded | null): string {
  if (yesno && yesno.type === 'yesno_book') return JSON.stringify([yesno.yes, yesno.no]);
  return JSON.stringify(b.checkpointBooks().sort((x, y) => (x.token_id < y.token_id ? -1 : 1)));
}

export interface BooksPass {
  /** Books at each asked instant (sorted ascending), as text. */
  readonly at: Map<number, string>;
  /** Receive times at which the books' text changed. */
  readonly changes: number[];
  /** The recorder the newest book record named at each instant (a merged day), else null. */
  readonly src: Map<number, string | null>;
}

/** One forward pass: the books as of each instant of `instants` (ascending) and every change time. */
export async function booksPass(reader: LogReader, instants: readonly number[]): Promise<BooksPass> {
  const books = new MarketBooks();
  let yesno: Recorded | null = null;
  let text = stateText(books, null);
  const at = new Map<number, string>();
  const src = new Map<number, string | null>();
  const changes: number[] = [];
  let who: string | null = null;
  let i = 0;
  for await (const { rec } of reader.read('start')) {
    while (i < instants.length && instants[i] < rec.recv_ts) {
      src.set(instants[i], who);
      at.set(instants[i++], text);
    }
    if (rec.type !== 'trade' && rec.type !== 'gap') who = rec.recorder ?? null;
    books.apply(rec);
    if (rec.type === 'yesno_book') yesno = rec;
    if (rec.type === 'gap' && rec.end_ts === null) yesno = null;
    const next = stateText(books, yesno);
    if (next !== text) changes.push(rec.recv_ts);
    text = next;
  }
  while (i < instants.length) {
    src.set(instants[i], who);
    at.set(instants[i++], text);
  }
  return { at, changes, src };
}

/**
 * The times a recorder did not hold a market's books within [from, to): before its first whole
 * book, after its last record, and its gap spans by the coverage route's rule.
 */
export async function uncovered(reader: LogReader, from: number, to: number): Promise<[number, number][]> {
  const g = new GapScanner();
  await g.update(reader);
  let first: number | null = null;
  let last = -Infinity;
  const tokens = new Set<string>();
  const booked = new Set<string>();
  for await (const { rec } of reader.read('start')) {
    last = rec.recv_ts;
    if (first !== null) continue;
    if (rec.type === 'book_delta') tokens.add(rec.token_id);
    if (rec.type === 'book') {
      tokens.add(rec.token_id);
      booked.add(rec.token_id);
      if ([...tokens].every((x) => booked.has(x))) first = rec.recv_ts;
    }
    if (rec.type === 'book_checkpoint' || rec.type === 'yesno_book') first = rec.recv_ts;
  }
  const spans: [number, number][] = g.spans().map((s) => [s.start, s.end ?? to]);
  if (first === null) return [[from, to]];
  spans.push([from, first], [last + 1, to]);
  return union(spans.map(([a, b]) => [Math.max(a, from), Math.min(b, to)] as [number, number]).filter(([a, b]) => b > a));
}

export function union(spans: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of [...spans].sort((x, y) => x[0] - y[0])) {
    const p = out[out.length - 1];
    if (p && a <= p[1]) p[1] = Math.max(p[1], b);
    else out.push([a, b]);
  }
  return out;
}

export function intersect(x: [number, number][], y: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of x) for (const [c, d] of y) if (Math.min(b, d) > Math.max(a, c)) out.push([Math.max(a, c), Math.min(b, d)]);
  return union(out);
}

export const inSpans = (spans: readonly [number, number][], t: number): boolean => spans.some(([a, b]) => a <= t && t < b);
