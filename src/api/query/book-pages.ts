// Snapshot pages and point-in-time books read from one market's books log. A book is rebuilt from
// the nearest checkpoint at or before a page start and replayed forward (src/book/book-state.ts);
// every book-changing observation yields one snapshot; checkpoints, trades and gaps yield none.
// Cursors resume by seq (stable across appends and compaction), never by byte offset.

import { MarketBooks, type TokenView } from '../../book/book-state.js';
import type { Recorded } from '../../schema/observation.js';
import type { LogReader, Position, ReadItem } from '../../storage/index.js';
import type { BookSource } from './shapes.js';
import type { CursorPos } from './cursor.js';

/** How one family turns records into snapshots. */
export interface BookModel {
  /** False when every snapshot record is a full book on its own (yes/no): no replay needed. */
  readonly replay: boolean;
  /** Type-level test: could this record produce a snapshot? */
  candidate(rec: Recorded): boolean;
  /** After applying: did it change a book this model serves? (`changed` = tokens MarketBooks reported) */
  produces(rec: Recorded, changed: readonly string[]): boolean;
  /** The public snapshot object, or null when there is no valid book to show. */
  shape(rec: Recorded, books: BookSource): Record<string, unknown> | null;
}

export interface PageRequest {
  readonly order: 'asc' | 'desc';
  readonly limit: number;
  readonly start?: number;
  readonly end?: number;
  /** From a cursor: asc resumes after this seq, desc before it. */
  readonly resume?: number;
  /** Records scanned before a page is cut short (with a cursor) so one request stays bounded. */
  readonly budget?: number;
}

export interface Page {
  readonly items: Record<string, unknown>[];
  /** The cursor position of the next page, or null when nothing more exists now. */
  readonly next: CursorPos | null;
}

const DEFAULT_BUDGET = 50_000;

async function firstOf(it: AsyncIterable<ReadItem>): Promise<ReadItem | null> {
  for await (const x of it) return x;
  return null;
}

/** Where a replay must start to know the books just before `item`: the checkpoint before it, or the start. */
export async function replayStart(reader: LogReader, item: ReadItem): Promise<Position | 'start'> {
  let cp = await reader.checkpointAtOrBefore(item.rec.recv_ts);
  if (cp && cp.rec.seq >= item.rec.seq) cp = item.rec.recv_ts > 0 ? await reader.checkpointAtOrBefore(item.rec.recv_ts - 1) : null;
  if (cp && cp.rec.seq >= item.rec.seq) cp = null;
  return cp ? cp.pos : 'start';
}

/** The books as they stood just before `item` (every record with a smaller seq applied). */
export async function booksBefore(reader: LogReader, item: ReadItem): Promise<MarketBooks> {
  const books = new MarketBooks();
  for await (const it of reader.read(await replayStart(reader, item))) {
    if (it.rec.seq >= item.rec.seq) break;
    books.apply(it.rec);
  }
  return books;
}

/**
 * Where a replay towards `bound` should start so the newest snapshot record before the bound is
 * replayed itself (not only the checkpoint after it): the checkpoint before that record.
 */
export async function anchoredStart(reader: LogReader, model: BookModel, bound: Position | 'end', budget = DEFAULT_BUDGET): Promise<Position | 'start'> {
  let n = 0;
  for await (const it of reader.readBackward(bound)) {
    if (model.candidate(it.rec)) return replayStart(reader, it);
    if (++n >= budget) break;
  }
  // No snapshot record nearby: the newest checkpoint before the bound is the best start.
  const last = await firstOf(reader.readBackward(bound, { limit: 1 }));
  if (!last) return 'start';
  const cp = await reader.checkpointAtOrBefore(last.rec.recv_ts);
  return cp ? cp.pos : 'start';
}

async function ascPage(reader: LogReader, model: BookModel, req: PageRequest): Promise<Page> {
  let from: Position | null;
  if (req.resume !== undefined) from = await reader.seekSeq(req.resume + 1);
  else if (req.start !== undefined) from = await reader.seekTime(req.start);
  else from = (await reader.first())?.pos ?? null;
  if (!from) return { items: [], next: null };
  const head = await firstOf(reader.read(from, { limit: 1, endTime: req.end }));
  if (!head) return { items: [], next: null };
  const books = model.replay ? await booksBefore(reader, head) : new MarketBooks();
  const budget = req.budget ?? DEFAULT_BUDGET;
  const items: Record<string, unknown>[] = [];
  let lastEmitted = -1;
  let lastScanned = -1;
  let scanned = 0;
  let more = false;
  let cut = false;
  for await (const it of reader.read(from, { endTime: req.end })) {
    const rec = it.rec;
    const changed = model.replay ? books.apply(rec) : [];
    if (model.candidate(rec) && model.produces(rec, changed)) {
      const snap = model.shape(rec, books);
      if (snap) {
        if (items.length === req.limit) {
          more = true;
          break;
        }
        items.push(snap);
        lastEmitted = rec.seq;
      }
    }
    lastScanned = rec.seq;
    if (++scanned >= budget) {
      cut = true;
      break;
    }
  }
  if (more) return { items, next: { after: lastEmitted } };
  if (cut) return { items, next: { after: lastScanned } };
  return { items, next: null };
}

async function descPage(reader: LogReader, model: BookModel, req: PageRequest): Promise<Page> {
  let bound: Position | 'end' = 'end';
  if (req.resume !== undefined) bound = (await reader.seekSeq(req.resume)) ?? 'end';
  else if (req.end !== undefined) bound = (await reader.seekTime(req.end)) ?? 'end';
  const budget = req.budget ?? DEFAULT_BUDGET;
  const cands: ReadItem[] = [];
  let scanned = 0;
  let lastScanned = -1;
  let exhausted = true;
  for await (const it of reader.readBackward(bound, { startTime: req.start })) {
    lastScanned = it.rec.seq;
    if (model.candidate(it.rec)) {
      cands.push(it);
      if (cands.length > req.limit) {
        exhausted = false;
        break;
      }
    }
    if (++scanned >= budget) {
      exhausted = false;
      break;
    }
  }
  if (cands.length === 0) return { items: [], next: exhausted ? null : { before: lastScanned } };
  const oldest = cands[cands.length - 1];
  const newest = cands[0];
  const out: { seq: number; snap: Record<string, unknown> }[] = [];
  if (model.replay) {
    const want = new Set(cands.map((c) => c.rec.seq));
    const books = await booksBefore(reader, oldest);
    for await (const it of reader.read(oldest.pos)) {
      if (it.rec.seq > newest.rec.seq) break;
      const changed = books.apply(it.rec);
      if (want.has(it.rec.seq) && model.produces(it.rec, changed)) {
        const snap = model.shape(it.rec, books);
        if (snap) out.push({ seq: it.rec.seq, snap });
      }
    }
    out.reverse();
  } else {
    const none = new MarketBooks();
    for (const c of cands) {
      const snap = model.produces(c.rec, []) ? model.shape(c.rec, none) : null;
      if (snap) out.push({ seq: c.rec.seq, snap });
    }
  }
  const page = out.slice(0, req.limit);
  if (out.length > req.limit) return { items: page.map((x) => x.snap), next: { before: page[page.length - 1].seq } };
  return { items: page.map((x) => x.snap), next: exhausted ? null : { before: lastScanned } };
}

/** One page of snapshots in either order. */
export function snapshotPage(reader: LogReader, model: BookModel, req: PageRequest): Promise<Page> {
  return req.order === 'desc' ? descPage(reader, model, req) : ascPage(reader, model, req);
}

/** A book state frozen at one record: the views are immutable arrays, cheap to keep. */
export class FrozenBooks implements BookSource {
  /** Shaped snapshots of this state by shape options: the latest routes reuse them while nothing changes. */
  private readonly memo = new Map<string, Record<string, unknown> | null>();

  constructor(private readonly views: ReadonlyMap<string, TokenView>) {}

  /** `make()` once per options key for this frozen state (bounded: a few option sets are hot). */
  shaped(key: string, make: () => Record<string, unknown> | null): Record<string, unknown> | null {
    if (this.memo.has(key)) return this.memo.get(key)!;
    if (this.memo.size >= 16) this.memo.clear();
    const v = make();
    this.memo.set(key, v);
    return v;
  }

  static of(books: MarketBooks): FrozenBooks {
    return new FrozenBooks(new Map(books.validTokens().map((t) => [t, books.view(t)!])));
  }
  view(tokenId: string, depth?: number): TokenView | null {
    const v = this.views.get(tokenId);
    if (!v) return null;
    return depth === undefined ? v : { token_id: v.token_id, bids: v.bids.slice(0, depth), asks: v.asks.slice(0, depth) };
  }
  /** Rough bytes held, for the byte-bounded cache. */
  weight(): number {
    let n = 256;
    for (const v of this.views.values()) n += 96 * (v.bids.length + v.asks.length) + 128;
    return n;
  }
}

/** The newest snapshot-producing state of a replay: the record, its frozen books, and whether a gap is open after it. */
export interface BookPoint {
  readonly rec: Recorded;
  readonly books: FrozenBooks;
  /** An open gap followed the last book: the book is no longer known to be current. */
  readonly gapOpen: boolean;
}

/**
 * Incremental replay state: feed records in log order, read the newest served book at any time.
 * A book is frozen only when asked for (or just before a gap invalidates it), so replaying long
 * runs of deltas stays cheap.
 */
export class BookTracker {
  readonly books = new MarketBooks();
  private pending: Recorded | null = null;
  private point: { rec: Recorded; books: FrozenBooks } | null = null;
  private gapOpen = false;
  lastSeq = -1;

  constructor(private readonly model: BookModel) {}

  apply(rec: Recorded): void {
    this.lastSeq = rec.seq;
    if (rec.type === 'gap' && rec.end_ts === null) {
      this.freeze();
      this.gapOpen = true;
    }
    const changed = this.model.replay ? this.books.apply(rec) : [];
    if (this.model.candidate(rec) && this.model.produces(rec, changed)) {
      this.pending = rec;
      this.gapOpen = false;
    } else if (rec.type === 'book_checkpoint') {
      // A checkpoint that ends a gap (or starts the replay) is the newest known state itself.
      if (this.gapOpen || (!this.point && !this.pending)) this.pending = rec;
      this.gapOpen = false;
    }
  }

  private freeze(): void {
    if (!this.pending) return;
    const frozen = FrozenBooks.of(this.books);
    if (this.model.shape(this.pending, frozen)) this.point = { rec: this.pending, books: frozen };
    this.pending = null;
  }

  current(): BookPoint | null {
    this.freeze();
    return this.point ? { rec: this.point.rec, books: this.point.books, gapOpen: this.gapOpen } : null;
  }

  weight(): number {
    return 1024 + (this.point?.books.weight() ?? 0) * 2;
  }
}

/**
 * The book as it stood at `t`: from the nearest checkpoint at or before t plus the records after
 * it, never a record received after t (clock `receive`), or never one whose venue time is after t
 * (clock `source`; records without a venue time count by their receive time).
 */
export async function bookAsOf(reader: LogReader, model: BookModel, t: number, clock: 'receive' | 'source'): Promise<BookPoint | null> {
  const bound = (await reader.seekTime(t + 1)) ?? 'end';
  const from = await anchoredStart(reader, model, bound);
  const tracker = new BookTracker(model);
  const opts = clock === 'receive' ? { endTime: t + 1 } : {};
  for await (const it of reader.read(from, opts)) {
    if (clock === 'source' && (it.rec.source_ts ?? it.rec.recv_ts) > t) break;
    tracker.apply(it.rec);
  }
  return tracker.current();
}
