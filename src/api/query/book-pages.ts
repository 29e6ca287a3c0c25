// Snapshot pages and point-in-time books read from one market's books log. A book is rebuilt from
// the nearest checkpoint before a page start and replayed forward (src/book/book-state.ts) in one
// pass over one LogView (days planned once per request); every book-changing observation yields one
// snapshot; checkpoints, trades and gaps yield none. Cursors resume by seq, never by byte offset.

import { MarketBooks, type TokenView } from '../../book/book-state.js';
import type { Recorded } from '../../schema/observation.js';
import type { LogReader, LogView, Position, ReadItem, ReplayFrom } from '../../storage/index.js';
import type { BookModel, BookSource, CursorPos } from '../../book/book-model.js';

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
  /**
   * Where a page that exhausted the log would resume after its last item (null without items): a
   * reader stitching the archive and a live server continues on the other side from here.
   */
  readonly tail?: CursorPos | null;
}

const DEFAULT_BUDGET = 50_000;

/**
 * Where a replay towards `bound` should start so the newest snapshot record before the bound is
 * replayed itself (not only the checkpoint after it): that record, warmed up from the checkpoint
 * before it. Without a snapshot record within `budget`, the newest checkpoint at or before the
 * newest record (no warm-up needed: a checkpoint restates the books).
 */
async function anchoredFrom(
  view: LogView,
  model: BookModel,
  bound: Position | 'end',
  budget = DEFAULT_BUDGET,
): Promise<{ from: ReplayFrom; warmup: boolean }> {
  let n = 0;
  let last: ReadItem | null = null;
  for await (const it of view.backward(bound)) {
    last ??= it;
    if (model.candidate(it.rec)) return { from: { pos: it.pos }, warmup: true };
    if (++n >= budget) break;
  }
  if (!last) return { from: 'start', warmup: false };
  const cp = await view.checkpointAtOrBefore(last.rec.recv_ts);
  return { from: cp ? { pos: cp.pos } : 'start', warmup: false };
}

/** Where a replay towards `bound` starts (see anchoredFrom), as a position to read from. */
export async function anchoredStart(
  reader: LogReader,
  model: BookModel,
  bound: Position | 'end',
  budget = DEFAULT_BUDGET,
): Promise<Position | 'start'> {
  return anchoredStartIn(await reader.view(), model, bound, budget);
}

/** `anchoredStart` in a view the caller planned (and goes on reading). */
export async function anchoredStartIn(
  view: LogView,
  model: BookModel,
  bound: Position | 'end',
  budget = DEFAULT_BUDGET,
): Promise<Position | 'start'> {
  const a = await anchoredFrom(view, model, bound, budget);
  if (a.from === 'start') return 'start';
  for await (const it of view.replay(a.from, { warmup: a.warmup })) return it.pos;
  return 'start';
}

/** Where an ascending page starts: after the cursor's seq, at start_time, or at the first record. */
const ascFrom = (req: PageRequest): ReplayFrom =>
  req.resume !== undefined ? { seq: req.resume + 1 } : req.start !== undefined ? { time: req.start } : 'start';

/** One pass: warm-up records (from the checkpoint before the start) rebuild the books, then the page. */
async function ascPage(reader: LogReader, model: BookModel, req: PageRequest): Promise<Page> {
  const view = await reader.view();
  const books = new MarketBooks();
  const budget = req.budget ?? DEFAULT_BUDGET;
  const items: Record<string, unknown>[] = [];
  let lastEmitted = -1;
  let lastScanned = -1;
  let scanned = 0;
  let more = false;
  let cut = false;
  for await (const it of view.replay(ascFrom(req), { until: req.end, warmup: model.replay })) {
    const rec = it.rec;
    const changed = model.replay ? books.apply(rec) : [];
    if (it.warmup) continue;
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
  return { items, next: null, tail: items.length > 0 ? { after: lastEmitted } : null };
}

/** Candidates walking back from the bound, then one warm-up pass from the oldest to the newest. */
async function descPage(reader: LogReader, model: BookModel, req: PageRequest): Promise<Page> {
  const view = await reader.view();
  let bound: Position | 'end' = 'end';
  if (req.resume !== undefined) bound = (await view.seek({ seq: req.resume })) ?? 'end';
  else if (req.end !== undefined) bound = (await view.seek({ time: req.end })) ?? 'end';
  const budget = req.budget ?? DEFAULT_BUDGET;
  const cands: ReadItem[] = [];
  let scanned = 0;
  let lastScanned = -1;
  let exhausted = true;
  for await (const it of view.backward(bound, { startTime: req.start })) {
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
  if (cands.length === 0) return { items: [], next: exhausted ? null : { before: lastScanned }, tail: null };
  const oldest = cands[cands.length - 1];
  const newest = cands[0];
  const out: { seq: number; snap: Record<string, unknown> }[] = [];
  if (model.replay) {
    const want = new Set(cands.map((c) => c.rec.seq));
    const books = new MarketBooks();
    for await (const it of view.replay({ pos: oldest.pos }, { warmup: true })) {
      if (it.rec.seq > newest.rec.seq) break;
      const changed = books.apply(it.rec);
      if (!it.warmup && want.has(it.rec.seq) && model.produces(it.rec, changed)) {
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
  const tail = page.length > 0 ? { before: page[page.length - 1].seq } : null;
  return { items: page.map((x) => x.snap), next: exhausted ? null : { before: lastScanned }, tail };
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
  const view = await reader.view();
  const bound = (await view.seek({ time: t + 1 })) ?? 'end';
  const { from, warmup } = await anchoredFrom(view, model, bound);
  const tracker = new BookTracker(model);
  for await (const it of view.replay(from, { warmup, until: clock === 'receive' ? t + 1 : undefined })) {
    if (clock === 'source' && (it.rec.source_ts ?? it.rec.recv_ts) > t) break;
    tracker.apply(it.rec);
  }
  return tracker.current();
}
