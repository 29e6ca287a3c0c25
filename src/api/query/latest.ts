// Latest books, kept warm: one BookTracker per market log in a cache bounded by bytes. A request
// reads only what was appended since the tracker's last seq (usually nothing), so the latest route
// costs one `latest()` lookup; a cold market starts from the newest checkpoint. Concurrent requests
// for one market share lookups: a request joins the next lookup that starts after it arrived, so
// under load N requests cost about two lookups and none is answered from a check older than itself.

import { LRUCache } from 'lru-cache';
import type { LogReader } from '../../storage/index.js';
import { anchoredStart, BookTracker, type BookModel, type BookPoint } from './book-pages.js';

interface Entry {
  readonly tracker: BookTracker;
  /** The lookup running now, and the one queued behind it (shared by everyone who arrived meanwhile). */
  running: Promise<void> | null;
  queued: Promise<void> | null;
}

export class LatestBooks {
  private readonly cache: LRUCache<string, Entry>;

  constructor(maxBytes = 64 * 1024 * 1024) {
    this.cache = new LRUCache<string, Entry>({ maxSize: maxBytes, sizeCalculation: (e) => Math.max(1, e.tracker.weight()) });
  }

  /** Brings the tracker up to the log's newest record. */
  private async catchUp(e: Entry, reader: LogReader, model: BookModel): Promise<void> {
    // Usually nothing is new: the position (one stat of today's file) says so without a read.
    const last = await reader.latestPosition();
    const t = e.tracker;
    if (!last || t.lastSeq >= last.seq) return;
    let from;
    if (t.lastSeq < 0) {
      // Cold: from the checkpoint before the newest snapshot record, so that record names the book.
      from = await anchoredStart(reader, model, 'end');
    } else {
      from = await reader.seekSeq(t.lastSeq + 1);
    }
    if (from === null) return;
    for await (const it of reader.read(from)) {
      if (it.rec.seq > t.lastSeq) t.apply(it.rec);
    }
  }

  private lookup(key: string, e: Entry, reader: LogReader, model: BookModel): Promise<void> {
    if (!e.running) {
      e.running = this.catchUp(e, reader, model).finally(() => {
        e.running = null;
        this.cache.set(key, e); // re-weigh
      });
      return e.running;
    }
    e.queued ??= e.running.catch(() => undefined).then(() => {
      e.queued = null;
      return this.lookup(key, e, reader, model);
    });
    return e.queued;
  }

  /** The newest served book of a log (and whether a gap is open after it), or null when it has none. */
  async get(cacheKey: string, reader: LogReader, model: BookModel): Promise<BookPoint | null> {
    let e = this.cache.get(cacheKey);
    if (!e) {
      e = { tracker: new BookTracker(model), running: null, queued: null };
      this.cache.set(cacheKey, e);
    }
    await this.lookup(cacheKey, e, reader, model);
    return e.tracker.current();
  }
}
