// Coverage of one market: first/last record per dataset, and the recorded intervals and gaps of its
// books computed from the gap records in the log (an open gap ends at the next full book). Results
// are kept per market and updated incrementally, so repeated questions read only new records.
//
// The first/last spans are kept per log with the log's stamp (storage's `logStampSync`: a listing
// of its folder and one stat) and re-read only when the stamp changed: reading them costs planning
// the log's days and decoding its first and newest records, three logs a market, which made a
// 1,000-market page of `/v3/coverage` cost seconds of CPU. Stamping is avoided too where it can
// be: a log written since yesterday (UTC) has its folder watched (storage's LogChanges) and is
// stamped again only once the watch reported a change, at most every `ttlMs` (1 s, the markets
// view's own age); one whose watch could not be set is stamped every `ttlMs`; an older one every
// RECHECK_MS (a quiet log changes only by a new day file, which that check sees, or by a Parquet
// publication, whose stamp is compared on every page). Every span is stamped at least every
// RECHECK_MS whatever its watch says (file systems that report no events).

import { LRUCache } from 'lru-cache';
import type { Family, GapReason, StreamName } from '../../schema/observation.js';
import { toIso, utcDay } from '../../schema/time.js';
import {
  listMarkets,
  logStampSync,
  parquetDates,
  parquetStamp,
  sameStamp,
  type LogChanges,
  type LogChangeSubscription,
  type LogReader,
  type LogStamp,
  type SpanHint,
  logCensus,
  type CensusLog,
} from '../../storage/index.js';
import { RECHECK_MS } from './markets-index.js';

export interface Span {
  start: number;
  end: number | null;
  reason: GapReason;
}

export interface DatasetSpan {
  first_time: string;
  last_time: string;
  first_seq: number;
  last_seq: number;
}

export async function datasetSpan(reader: LogReader, hint?: SpanHint): Promise<DatasetSpan | null> {
  if (reader.span) {
    // From the compacted days' manifests where they vouch for the day (storage's LogReader.span).
    const s = await reader.span(hint);
    return s && { first_time: toIso(s.first.recv_ts), last_time: toIso(s.last.recv_ts), first_seq: s.first.seq, last_seq: s.last.seq };
  }
  const [first, last] = await Promise.all([reader.first(), reader.latest()]);
  if (!first || !last) return null;
  return { first_time: toIso(first.rec.recv_ts), last_time: toIso(last.rec.recv_ts), first_seq: first.rec.seq, last_seq: last.rec.seq };
}

/**
 * The gaps of one books log, kept incrementally: each update reads only the records appended since
 * the last one (by seq), so a market's coverage costs one full scan, then only its growth.
 * Closed gap records are authoritative; an open one ends at the next full book.
 */
export class GapScanner {
  private lastSeq = -1;
  private readonly done: Span[] = [];
  private readonly open = new Map<string, Span>();

  /** Where the books' recorder changes (a day merged from several recorders names one per record). */
  private readonly switches: { start: number; recorder: string | null }[] = [];

  async update(reader: LogReader): Promise<void> {
    const from = this.lastSeq < 0 ? 'start' : await reader.seekSeq(this.lastSeq + 1);
    if (from === null) return;
    for await (const { rec } of reader.read(from)) {
      this.lastSeq = rec.seq;
      // Book records only: a merged day's trades are kept from whichever recorder saw them.
      if (rec.type !== 'trade' && rec.type !== 'gap') {
        const r = rec.recorder ?? null;
        if ((this.switches.at(-1)?.recorder ?? null) !== r) this.switches.push({ start: rec.recv_ts, recorder: r });
      }
      if (rec.type === 'gap') {
        const k = `${rec.start_ts}|${rec.token_id ?? ''}`;
        if (rec.end_ts === null) {
          if (!this.open.has(k)) this.open.set(k, { start: rec.start_ts, end: null, reason: rec.reason });
        } else {
          this.open.delete(k);
          this.done.push({ start: rec.start_ts, end: rec.end_ts, reason: rec.reason });
        }
      } else if ((rec.type === 'book' || rec.type === 'book_checkpoint' || rec.type === 'yesno_book') && this.open.size > 0) {
        for (const g of this.open.values()) this.done.push({ ...g, end: Math.max(g.start, rec.recv_ts) });
        this.open.clear();
      }
    }
  }

  /** Gaps in start order, overlapping spans merged (a closed record may restate a span a book closed). */
  spans(): Span[] {
    const all = [...this.done, ...this.open.values()].sort((a, b) => a.start - b.start);
    const out: Span[] = [];
    for (const g of all) {
      const prev = out[out.length - 1];
      if (prev && (prev.end === null || g.start <= prev.end)) {
        if (prev.end !== null && (g.end === null || g.end > prev.end)) prev.end = g.end;
        continue;
      }
      out.push({ ...g });
    }
    return out;
  }

  /** Recorder switches in time order (empty for a single recorder's books). */
  sources(): { start: number; recorder: string | null }[] {
    return this.switches.some((x) => x.recorder !== null) ? this.switches : [];
  }

  weight(): number {
    return 1 + this.done.length + this.open.size + this.switches.length;
  }
}

export interface MarketCoverage {
  readonly datasets: Record<'books' | 'metrics' | 'catalog', DatasetSpan | null>;
  readonly gaps: Span[];
  /** Recorder switches of a merged history (see GapScanner.sources); empty otherwise. */
  readonly sources?: { start: number; recorder: string | null }[];
}

interface SpanEntry {
  /** The log's stamp taken before `span` was read. */
  readonly stamp: LogStamp;
  readonly span: DatasetSpan | null;
  /** When the stamp was last compared (the cache's clock). */
  checkedAt: number;
}

type SpanStream = 'books' | 'metrics' | 'catalog';

interface StreamState {
  readonly parquet: string;
  /** Markets with a log folder of the stream (one listing): the others are stamped without a call. */
  readonly folders: ReadonlySet<string>;
  /** Logs with a day file since this UTC day count as live. */
  readonly since: string;
  /** The stream's compacted dates, taken with `parquet` (spans need not stat the folders again). */
  readonly dates: readonly string[];
  /** Logs whose stamp storage's census still knows (no listing, no stat); null: none known. */
  readonly census: ReadonlyMap<string, CensusLog> | null;
}
const DAY_MS = 86_400_000;

export class CoverageCache {
  private readonly scanners = new LRUCache<string, GapScanner>({ maxSize: 1_000_000, sizeCalculation: (g) => g.weight() });
  private readonly spans = new LRUCache<string, SpanEntry>({ max: 300_000 });
  /** Spans being read now: parallel requests for the same log share one read. */
  private readonly reading = new Map<string, Promise<DatasetSpan | null>>();
  private readonly streams = new Map<string, { at: number; state: Promise<StreamState>; value?: StreamState }>();
  /** Folder watches of live logs; `dirty` once a change was reported since the last stamp. */
  private readonly watches = new Map<string, { sub: LogChangeSubscription; dirty: boolean }>();
  /** Spans read from their logs (not from the cache) so far, and logs stamped (tests). */
  reads = 0;
  stamps = 0;

  /**
   * `dataDir` null: no cache (every span read from its log). `changes`: folder watches (none: live
   * logs are stamped every `ttlMs`). `now`: the clock of the re-stamping (tests).
   */
  constructor(
    private readonly dataDir: string | null = null,
    private readonly changes: LogChanges | null = null,
    private readonly ttlMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Ends the folder watches (server shutdown). */
  close(): void {
    for (const w of this.watches.values()) w.sub.close();
    this.watches.clear();
  }

  /**
   * Before a stamp of a live log: its watch set (or kept) and its change flag cleared, so a change
   * after the stamp is reported and one before it is in it. An old log's watch is let go.
   */
  private watch(key: string, family: Family, stream: SpanStream, market: string, live: boolean): void {
    const w = this.watches.get(key);
    if (!live || this.changes === null) {
      if (w) {
        w.sub.close();
        this.watches.delete(key);
      }
      return;
    }
    if (w?.sub.live) {
      w.dirty = false;
      return;
    }
    const entry = { sub: null as unknown as LogChangeSubscription, dirty: false };
    const sub = this.changes.subscribe({ family, stream, market }, () => void (entry.dirty = true));
    if (sub === null) {
      this.watches.delete(key);
      return;
    }
    entry.sub = sub;
    this.watches.set(key, entry);
  }

  /** The stream's Parquet stamp and the markets with a log folder, taken at most every `ttlMs`. */
  private streamState(family: Family, stream: SpanStream, now: number): Promise<StreamState> {
    const key = `${family}|${stream}`;
    const hit = this.streams.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.state;
    const held: { at: number; state: Promise<StreamState>; value?: StreamState } = {
      at: now,
      state: null as unknown as Promise<StreamState>,
    };
    held.state = Promise.all([
      parquetStamp(this.dataDir!, family, stream),
      listMarkets(this.dataDir!, family, stream),
      parquetDates(this.dataDir!, family, stream),
      logCensus(this.dataDir!, family, stream).catch(() => null),
    ]).then(
      ([parquet, ids, dates, census]) => (held.value = { parquet, folders: new Set(ids), since: utcDay(now - DAY_MS), dates, census }),
    );
    held.state.catch(() => this.streams.delete(key));
    this.streams.set(key, held);
    return held.state;
  }

  /**
   * The log's stamp: from the census when it knows the log and the log is not live (a live log's
   * newest file grows by appends, which the census cannot know), else a listing and a stat.
   */
  private stampOf(st: StreamState, family: Family, stream: SpanStream, market: string, exists: boolean, fresh = false): LogStamp {
    const c = exists && !fresh ? st.census?.get(market) : undefined;
    if (c !== undefined && !(c.day !== null && c.day >= st.since))
      return { day: c.day, size: c.size, mtimeMs: c.mtimeMs, ino: c.ino, parquet: st.parquet, days: c.days };
    if (exists) this.stamps++; // (a log without a folder is stamped without a call)
    return logStampSync(this.dataDir!, { family, stream, market }, st.parquet, exists);
  }

  /**
   * True when a cached span is served without a stamp: checked less than `ttlMs` ago, or less than
   * RECHECK_MS ago and either quiet (no day file since yesterday) or watched with no change reported.
   */
  private servable(key: string, e: SpanEntry, st: StreamState, now: number): boolean {
    const age = now - e.checkedAt;
    if (age < this.ttlMs) return true;
    if (age >= RECHECK_MS) return false;
    if (!(e.stamp.day !== null && e.stamp.day >= st.since)) return true;
    const w = this.watches.get(key);
    return w !== undefined && w.sub.live && !w.dirty;
  }

  /**
   * The spans of one market from the cache without a promise, when each is young enough to be
   * served as is (see `span`); undefined otherwise (use `get`). A list page asks this first: a
   * thousand markets' awaits were most of a warm page's cost.
   */
  getNow(family: Family, market: string): MarketCoverage | undefined {
    if (this.dataDir === null) return undefined;
    const now = this.now();
    const out: (DatasetSpan | null)[] = [];
    for (const stream of ['books', 'metrics', 'catalog'] as const) {
      const held = this.streams.get(`${family}|${stream}`);
      const st = held?.value;
      if (!held || !st || held.value !== st || now - held.at >= this.ttlMs) return undefined;
      const key = `${family}|${stream}|${market}`;
      const e = this.spans.get(key);
      if (!e || e.stamp.parquet !== st.parquet) return undefined;
      if (!this.servable(key, e, st, now)) return undefined;
      out.push(e.span);
    }
    return { datasets: { books: out[0], metrics: out[1], catalog: out[2] }, gaps: [] };
  }

  /**
   * First/last of one log: from the cache while its stamp holds. `fresh`: the stamp is compared
   * now whatever its age (one market's coverage: one listing and stat a log).
   */
  async span(
    family: Family,
    stream: SpanStream,
    market: string,
    reader: (s: StreamName) => Promise<LogReader>,
    fresh = false,
  ): Promise<DatasetSpan | null> {
    if (this.dataDir === null) {
      this.reads++;
      return datasetSpan(await reader(stream));
    }
    const key = `${family}|${stream}|${market}`;
    const now = this.now();
    const st = await this.streamState(family, stream, now);
    const e = this.spans.get(key);
    if (e && !fresh && e.stamp.parquet === st.parquet && this.servable(key, e, st, now)) return e.span;
    const recent = e !== undefined && e.stamp.day !== null && e.stamp.day >= st.since;
    const exists = fresh || st.folders.has(market);
    // A log seen live last time is watched from before this stamp on. One not seen yet is stamped
    // first and watched only when that stamp is live, then stamped again (a change between the two
    // is in the second): setting and closing a folder watch for each of thousands of logs of closed
    // days was a fifth of a cold page over compacted history.
    const watchFirst = exists && e !== undefined && recent;
    this.watch(key, family, stream, market, watchFirst);
    let stamp = this.stampOf(st, family, stream, market, exists, fresh);
    const live = (s: LogStamp): boolean => s.day !== null && s.day >= st.since;
    if (!watchFirst && exists && live(stamp)) {
      this.watch(key, family, stream, market, true);
      stamp = logStampSync(this.dataDir, { family, stream, market }, st.parquet, exists);
    }
    if (!live(stamp)) this.watch(key, family, stream, market, false);
    if (e && sameStamp(e.stamp, stamp)) {
      e.checkedAt = now;
      return e.span;
    }
    if (stamp.days?.length === 0 && st.dates.length === 0) {
      // No day file and nothing compacted: no record, known without a reader (a family's metrics).
      this.reads++;
      this.spans.set(key, { stamp, span: null, checkedAt: now });
      return null;
    }
    const running = fresh ? undefined : this.reading.get(key);
    if (running) return running;
    const p = (async () => {
      this.reads++;
      const span = await datasetSpan(await reader(stream), {
        logDays: stamp.days,
        parquetDates: st.dates,
        newest: stamp.day === null ? undefined : { day: stamp.day, size: stamp.size },
      });
      this.spans.set(key, { stamp, span, checkedAt: now });
      return span;
    })().finally(() => {
      if (this.reading.get(key) === p) this.reading.delete(key);
    });
    this.reading.set(key, p);
    return p;
  }

  /**
   * Every catalogued market's spans read once (a list page's work, without gaps), so that the first
   * page a server answers is a warm one: `serve` calls it before it listens. With the compacted
   * days' summaries and the logs' census this reads a few files; without them, every log.
   */
  async warm(
    families: readonly Family[],
    list: (f: Family) => Promise<readonly { market: { market_id: string } }[]>,
    reader: (f: Family, s: StreamName, market: string) => Promise<LogReader>,
  ): Promise<number> {
    let n = 0;
    for (const f of families)
      for (const e of await list(f)) {
        const id = e.market.market_id;
        if (this.getNow(f, id) === undefined) await this.get(f, id, (s) => reader(f, s, id), false);
        n++;
      }
    return n;
  }

  /** Spans of every dataset; the books' gaps too when `withGaps` (incremental scan of the books log). */
  async get(family: Family, market: string, reader: (s: StreamName) => Promise<LogReader>, withGaps = true): Promise<MarketCoverage> {
    const [b, m, c] = await Promise.all(
      (['books', 'metrics', 'catalog'] as const).map((s) => this.span(family, s, market, reader, withGaps)),
    );
    const datasets = { books: b, metrics: m, catalog: c };
    if (!withGaps || !b) return { datasets, gaps: [] };
    const books = await reader('books');
    const key = `${family}|${market}`;
    let g = this.scanners.get(key);
    if (!g) this.scanners.set(key, (g = new GapScanner()));
    await g.update(books);
    this.scanners.set(key, g); // re-weigh
    return { datasets, gaps: g.spans(), sources: g.sources() };
  }
}

/**
 * The recorded intervals split by the recorder they came from (a merged history, docs/redundancy.md):
 * `intervals` cut at every recorder switch within [from, to).
 */
export function clipSources(
  intervals: readonly { start: string; end: string }[],
  switches: readonly { start: number; recorder: string | null }[],
): { start: string; end: string; recorder: string | null }[] {
  if (switches.length === 0) return [];
  const out: { start: string; end: string; recorder: string | null }[] = [];
  for (const iv of intervals) {
    const a = Date.parse(iv.start),
      b = Date.parse(iv.end);
    let i = -1;
    while (i + 1 < switches.length && switches[i + 1].start <= a) i++;
    let cur = a;
    for (;;) {
      const next = switches[i + 1]?.start ?? Infinity;
      const end = Math.min(b, next);
      if (end > cur) out.push({ start: toIso(cur), end: toIso(end), recorder: i >= 0 ? switches[i].recorder : null });
      if (next >= b) break;
      cur = next;
      i++;
    }
  }
  return out;
}

/** Gaps and covered intervals of the books within [from, to). */
export function clipCoverage(
  gaps: Span[],
  from: number,
  to: number,
): { intervals: { start: string; end: string }[]; gaps: { start: string; end: string | null; reason: GapReason }[] } {
  const intervals: { start: string; end: string }[] = [];
  const outGaps: { start: string; end: string | null; reason: GapReason }[] = [];
  let cur = from;
  for (const g of gaps) {
    const gEnd = g.end ?? Infinity;
    // An open gap that starts where the recorded data ends (the feed was lost and nothing came since)
    // is the market's state now: it is listed, not clipped away as an empty span.
    if (gEnd <= from || g.start > to || (g.start === to && g.end !== null)) continue;
    const s = Math.max(g.start, from);
    if (s > cur) intervals.push({ start: toIso(cur), end: toIso(s) });
    outGaps.push({ start: toIso(s), end: g.end === null ? null : toIso(Math.min(gEnd, to)), reason: g.reason });
    cur = Math.max(cur, Math.min(gEnd, to));
  }
  if (cur < to) intervals.push({ start: toIso(cur), end: toIso(to) });
  return { intervals, gaps: outGaps };
}
