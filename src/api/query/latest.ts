// Latest books, kept warm: one BookTracker per market log in a cache bounded by bytes.
//
// Freshness is pushed, not polled: each cached market subscribes to file events of its log folder
// (storage's LogChanges, one fs.watch per folder). An event marks the entry dirty; a request for a
// clean entry is a map lookup with no I/O at all. A dirty entry, one never checked, one whose watch
// could not be set, or one not checked for `recheckMs` (the safety net against a lost event) reads
// what was appended since the tracker's last seq, usually a single record. Day rollover (a new day
// file), compaction (a log deleted) and an append by another process are all events of that folder.
//
// Concurrent requests for one market share lookups: a request joins the next lookup that starts
// after it arrived, so under load N requests cost about two lookups and none is answered from a
// check older than itself or than the last change notice it could have seen.

import { LRUCache } from 'lru-cache';
import type { LogChanges, LogChangeSubscription, LogReader } from '../../storage/index.js';
import type { BookModel } from '../../book/book-model.js';
import { anchoredStart, BookTracker, type BookPoint } from './book-pages.js';

interface Entry {
  readonly tracker: BookTracker;
  /** The lookup running now, and the one queued behind it (shared by everyone who arrived meanwhile). */
  running: Promise<void> | null;
  queued: Promise<void> | null;
  /** The folder watch; null or not live: every request checks the log. */
  sub: LogChangeSubscription | null;
  /** A change notice came after the last check started. */
  dirty: boolean;
  /** When the last check started (the safety net's clock), and when a watch was last refused. */
  checkedAt: number;
  refusedAt: number;
  /** The running lookup is the safety net's, started by `peek` with no change notice behind it. */
  netCheck: boolean;
  /** What the last `get` read the log with: the safety net's background check uses them again. */
  reader: LogReader;
  model: BookModel;
}

export interface LatestBooksOptions {
  /** Most bytes of book state kept warm (default 64 MiB). */
  readonly maxBytes?: number;
  /** File-change notices; without them every request checks the log (one stat). */
  readonly changes?: LogChanges | null;
  /** Re-check a clean entry at least this often (ms); 0 checks on every request. Default 1000. */
  readonly recheckMs?: number;
  /** Clock for the safety net (tests). */
  readonly now?: () => number;
}

export class LatestBooks {
  private readonly cache: LRUCache<string, Entry>;
  private readonly changes: LogChanges | null;
  private readonly recheckMs: number;
  private readonly now: () => number;
  /** Lookups that read the log (tests, /metrics): requests answered without I/O do not count. */
  checks = 0;

  constructor(opts: LatestBooksOptions = {}) {
    this.changes = opts.changes ?? null;
    this.recheckMs = opts.recheckMs ?? 1000;
    this.now = opts.now ?? Date.now;
    this.cache = new LRUCache<string, Entry>({
      maxSize: opts.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (e) => Math.max(1, e.tracker.weight()),
      dispose: (e) => e.sub?.close(), // an evicted market stops being watched
    });
  }

  /** Subscribes before the check it precedes, so a change during the check marks the entry dirty. */
  private watch(e: Entry, reader: LogReader): void {
    if (!this.changes || e.sub?.live) return;
    if (e.refusedAt > 0 && this.now() - e.refusedAt < this.recheckMs) return; // at the limit: retry later
    e.sub = this.changes.subscribe(reader.key, () => void (e.dirty = true));
    e.refusedAt = e.sub ? 0 : this.now();
  }

  /** Brings the tracker up to the log's newest record. */
  private async catchUp(e: Entry, reader: LogReader, model: BookModel): Promise<void> {
    this.watch(e, reader);
    e.dirty = false;
    e.checkedAt = this.now();
    this.checks++;
    try {
      // Usually nothing is new: the position (one stat of today's file) says so without a read.
      const last = await reader.latestPosition();
      const t = e.tracker;
      if (!last || t.lastSeq >= last.seq) return;
      // Cold: from the checkpoint before the newest snapshot record, so that record names the book.
      const from = t.lastSeq < 0 ? await anchoredStart(reader, model, 'end') : await reader.seekSeq(t.lastSeq + 1);
      if (from === null) return;
      for await (const it of reader.read(from)) {
        if (it.rec.seq > t.lastSeq) t.apply(it.rec);
      }
    } catch (err) {
      e.dirty = true; // the next request tries again
      throw err;
    }
  }

  private lookup(key: string, e: Entry, reader: LogReader, model: BookModel): Promise<void> {
    if (!e.running) {
      e.running = this.catchUp(e, reader, model).finally(() => {
        e.running = null;
        e.netCheck = false;
        if (this.cache.get(key) === e) this.cache.set(key, e); // re-weigh (an evicted entry stays out)
      });
      return e.running;
    }
    e.queued ??= e.running
      .catch(() => undefined)
      .then(() => {
        e.queued = null;
        return this.lookup(key, e, reader, model);
      });
    return e.queued;
  }

  /** True when the entry's book is known to be current without reading the log. */
  private fresh(e: Entry): boolean {
    return e.sub !== null && e.sub.live && !e.dirty && this.recheckMs > 0 && this.now() - e.checkedAt < this.recheckMs;
  }

  /** The newest served book of a log (and whether a gap is open after it), or null when it has none. */
  async get(cacheKey: string, reader: LogReader, model: BookModel): Promise<BookPoint | null> {
    let e = this.cache.get(cacheKey);
    if (!e) {
      e = {
        tracker: new BookTracker(model),
        running: null,
        queued: null,
        sub: null,
        dirty: true,
        checkedAt: 0,
        refusedAt: 0,
        netCheck: false,
        reader,
        model,
      };
      this.cache.set(cacheKey, e);
    }
    e.reader = reader;
    e.model = model;
    if (this.fresh(e)) {
      // No notice since the check running now (if any) started: that check is the answer.
      if (e.running) await e.running;
    } else {
      await this.lookup(cacheKey, e, reader, model);
    }
    return e.tracker.current();
  }

  /**
   * The newest book when it is known current without any I/O, else undefined: the caller takes
   * `get`. The route's synchronous fast path. Known current = watched, no change notice since the
   * last check, and no check running that a notice asked for. When the safety net's re-check is
   * due, `peek` starts it in the background and still answers: the net bounds how long a lost event
   * can go unnoticed, and without a notice the book in memory is the newest one known. (Before, the
   * due check sent every request arriving during it down the full path, and those waits kept
   * requests alive across young-generation collections, each of which then promoted them.)
   */
  peek(cacheKey: string): BookPoint | undefined {
    const e = this.cache.get(cacheKey);
    if (e === undefined || e.sub === null || !e.sub.live || e.dirty || this.recheckMs <= 0) return undefined;
    if (e.running !== null) {
      if (!e.netCheck) return undefined;
    } else if (this.now() - e.checkedAt >= this.recheckMs) {
      e.netCheck = true;
      this.lookup(cacheKey, e, e.reader, e.model).catch(() => undefined); // a failure marks the entry dirty
    }
    return e.tracker.current() ?? undefined;
  }

  /** Markets kept warm now. */
  get size(): number {
    return this.cache.size;
  }

  /** Drops every entry and its watch (server shutdown). */
  close(): void {
    this.cache.clear();
    this.changes?.close();
  }
}
