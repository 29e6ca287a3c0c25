// The recorders' answer to a disk that refuses writes (ENOSPC, EDQUOT, EIO) or to free space below
// `storage.min_free_bytes`: the log's writer pauses (its records are dropped and counted; upstream
// connections and books in memory stay), the disk is retried with backoff, and the same writer
// resumes on its own. In a books log the hole is a `storage_error` gap from the first record lost
// to the first record written again, which is a full book (a delta is never applied to a
// book the log does not have). One warning line per writer state change and one summary line every
// 30 s while any writer is paused: never a line per record.

import { DISK_ERROR_CODES, DiskError } from '../errors.js';
import type { Gap, Observation } from '../schema/observation.js';
import { freeBytes, type LogKey, type LogWriter } from '../storage/index.js';
import type { RecorderLogger } from './logger.js';

/** What the pause needs of one sink slot (one log). */
export interface Pausable {
  readonly key: LogKey;
  writer: LogWriter | null;
  /** The open in progress when the log was first used (null when it failed). */
  opening: Promise<LogWriter | null>;
  /** Newest recv_ts issued to this log (the monotonic clock's floor). */
  lastRecvTs: number;
  paused: PauseState | null;
  /** After a resume with no full books at hand: deltas wait for their token's full book. */
  resync: Resyncing | null;
}

/**
 * A books log resumed without full books: the open gap's start, whether its closing record was
 * written (at the first full book), and the tokens with a full book since the resume. Deltas of
 * other tokens are dropped; a recorder checkpoint (every valid book at once) ends it.
 */
export interface Resyncing {
  readonly since: number;
  closed: boolean;
  readonly fresh: Set<string>;
}

export interface PauseState {
  /** ENOSPC, EDQUOT, EIO, or `min_free_bytes` for the guard. */
  readonly errno: string;
  readonly at: number;
  dropped: number;
  /** recv_ts of the first record lost (refused by the disk or dropped while paused), or null. */
  since: number | null;
}

export interface PauseOptions {
  /** 0: no guard (writers pause only when the disk refuses a write). */
  readonly minFreeBytes: number;
  readonly logger: RecorderLogger;
  /** Opens (and installs) the writer of a log first opened while the disk was full. */
  open(s: Pausable): Promise<LogWriter>;
  /** Full books of the market as of `recvTs` from a recorder's memory, or null. */
  resync(key: LogKey, recvTs: number): readonly Observation[] | null;
  /** Every slot of the sink (the guard pauses them all). */
  slots(): Iterable<Pausable>;
  /** Errors that are not the disk's (reported as before). */
  report(err: Error, key: LogKey): void;
  /** Guard check period (default 1 s) and retry backoff bounds (default 250 ms → 5 s). */
  readonly guardMs?: number;
  readonly retryMs?: readonly [number, number];
  readonly summaryMs?: number;
}

export interface StorageStats {
  readonly paused_writers: number;
  readonly dropped_records: number;
  readonly free_bytes: number | null;
}

const FULL_BOOKS: ReadonlySet<string> = new Set(['book', 'yesno_book', 'book_checkpoint']);

/** True for a record that holds whole books (a venue snapshot, a yes/no book, a checkpoint). */
export const isFullBook = (o: Observation): boolean => FULL_BOOKS.has(o.type);

/** Free bytes a paused writer waits for before it tries the disk again (with no guard set). */
const RESUME_HEADROOM = 1024 * 1024;

const where = (k: LogKey) => ({ family: k.family, stream: k.stream, market: k.market });

export class StoragePause {
  private readonly paused = new Set<Pausable>();
  private dropped = 0;
  private free: number | null = null;
  /** True while free space is below the guard (new logs start paused). */
  private below = false;
  private retryMs: number;
  private retryTimer: NodeJS.Timeout | null = null;
  private guardTimer: NodeJS.Timeout | null = null;
  private summaryTimer: NodeJS.Timeout | null = null;
  private retrying = false;
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly o: PauseOptions,
  ) {
    this.retryMs = o.retryMs?.[0] ?? 250;
    if (o.minFreeBytes > 0) {
      this.guardTimer = setInterval(() => void this.checkGuard(), o.guardMs ?? 1000);
      this.guardTimer.unref();
      void this.checkGuard();
    }
  }

  stats(): StorageStats {
    return { paused_writers: this.paused.size, dropped_records: this.dropped, free_bytes: this.free };
  }

  /** True when a log opened now should start paused (free space below the guard). */
  get guardActive(): boolean {
    return this.below;
  }

  /** Pauses `s` (once; later calls only count). Returns true when it was running. */
  pause(s: Pausable, errno: string, detail: string, firstLostMs: number | null = null): boolean {
    if (this.closed || s.paused) return false;
    s.paused = { errno, at: Date.now(), dropped: 0, since: firstLostMs };
    this.paused.add(s);
    this.o.logger.warn(
      { ...where(s.key), errno, detail },
      'storage: writer paused; its records are dropped until the disk takes writes again',
    );
    this.armRetry();
    this.armSummary();
    return true;
  }

  /**
   * Stops retrying `s` (its log is closed: the market is no longer recorded). A writer closed while
   * paused says so, so that every paused line has its closing line (resumed, or this one).
   */
  forget(s: Pausable): void {
    if (!this.paused.delete(s) || !s.paused) return;
    const p = s.paused;
    this.o.logger.warn(
      { ...where(s.key), errno: p.errno, paused_ms: Date.now() - p.at, dropped: p.dropped },
      'storage: writer closed while paused; it is not resumed',
    );
  }

  /** Counts a record dropped while `s` is paused or waiting for a full book. */
  drop(s: Pausable, recvTs: number | null = null): void {
    if (s.paused) {
      s.paused.dropped++;
      if (s.paused.since === null && recvTs !== null) s.paused.since = recvTs;
    }
    this.dropped++;
  }

  /** A write failed: the disk's errors pause the writer, the rest are reported as before. */
  failed(s: Pausable, e: unknown): void {
    if (e instanceof DiskError) this.pause(s, e.errno, e.message, e.firstLostMs);
    else this.o.report(e as Error, s.key);
  }

  /** A gap of `key` over [start, end] (end null: still open), written at `recvTs`. */
  gap(start: number, end: number | null, recvTs: number, detail?: string): Gap {
    return {
      type: 'gap',
      recv_ts: recvTs,
      source_ts: null,
      origin: 'recorder',
      reason: 'storage_error',
      start_ts: start,
      end_ts: end,
      ...(detail ? { detail } : {}),
    };
  }

  close(): void {
    this.closed = true;
    for (const t of [this.retryTimer, this.summaryTimer]) if (t) clearTimeout(t);
    if (this.guardTimer) clearInterval(this.guardTimer);
  }

  private async checkGuard(): Promise<void> {
    const free = (this.free = await freeBytes(this.dataDir));
    if (free === null || this.closed) return;
    const min = this.o.minFreeBytes;
    if (!this.below && free < min) {
      this.below = true;
      this.o.logger.warn({ free_bytes: free, min_free_bytes: min }, 'storage: free space below storage.min_free_bytes; writers pause');
      for (const s of this.o.slots()) this.pause(s, 'min_free_bytes', `${free} bytes free, below ${min}`);
    } else if (this.below && free >= min + min / 8) {
      // Resuming a little above the mark keeps a disk hovering at it from flapping.
      this.below = false;
      this.armRetry(true);
    }
  }

  private armRetry(now = false): void {
    if (this.closed || this.paused.size === 0) return;
    if (now && this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        void this.retry();
      },
      now ? 0 : this.retryMs,
    );
    this.retryTimer.unref();
  }

  private armSummary(): void {
    if (this.summaryTimer || this.closed) return;
    const every = this.o.summaryMs ?? 30_000;
    const tick = (): void => {
      this.summaryTimer = null;
      if (this.closed || this.paused.size === 0) return;
      const byErrno: Record<string, number> = {};
      for (const s of this.paused) byErrno[s.paused!.errno] = (byErrno[s.paused!.errno] ?? 0) + 1;
      this.o.logger.warn(
        { paused_writers: this.paused.size, by_errno: byErrno, dropped_records: this.dropped, free_bytes: this.free },
        'storage: writers still paused',
      );
      this.summaryTimer = setTimeout(tick, every);
      this.summaryTimer.unref();
    };
    this.summaryTimer = setTimeout(tick, every);
    this.summaryTimer.unref();
  }

  /** Tries every paused writer once; backs off while the disk still refuses. */
  private async retry(): Promise<void> {
    if (this.retrying || this.closed) return;
    this.retrying = true;
    let refused = false;
    try {
      this.free = await freeBytes(this.dataDir);
      // Some headroom before a try: a disk that took back a few pages (the cut batches) is still
      // full, and a writer resumed onto it would pause again at once (two more lines per writer).
      const room = Math.max(this.o.minFreeBytes, RESUME_HEADROOM);
      if (this.below || (this.free !== null && this.free < room)) refused = true;
      else {
        for (const s of [...this.paused]) {
          if (this.closed) break;
          if (!(await this.resume(s))) {
            refused = true;
            break; // the disk is still full: the others would only fail the same way
          }
        }
      }
    } finally {
      this.retrying = false;
    }
    const [first, max] = this.o.retryMs ?? [250, 5000];
    this.retryMs = refused ? Math.min(max, this.retryMs * 2) : first;
    this.armRetry();
  }

  /**
   * Resumes one writer: the `storage_error` gap first (open, from the first record lost),
   * then full books from memory when a recorder has them, closing the gap at once; without them
   * the gap closes at the next full book the recorder writes. False while the disk still refuses.
   */
  private async resume(s: Pausable): Promise<boolean> {
    const p = s.paused!;
    let written: Promise<void> | null = null;
    try {
      // A log paused while its first open was still under way (the guard) waits for that open.
      const w = s.writer ?? (await s.opening) ?? (await this.o.open(s));
      if (!this.paused.has(s)) return true; // forgotten meanwhile (closeKey)
      const last = w.lastRecord();
      const now = Math.max(Date.now(), s.lastRecvTs, last?.recv_ts ?? 0);
      let resync: Resyncing | null = null;
      if (s.key.stream === 'books') {
        // The hole begins at the first record lost; never before the last one the log holds.
        const since = Math.max(p.since ?? last?.recv_ts ?? p.at, last?.recv_ts ?? 0);
        const detail = `${p.errno}: ${p.dropped} records not written`;
        const full = this.o.resync(s.key, now) ?? [];
        const recs: Observation[] = [this.gap(since, null, now, detail), ...full];
        if (full.length > 0) recs.push(this.gap(since, now, now, detail));
        else resync = { since, closed: false, fresh: new Set() };
        // Placed in the log now: the feed's next records queue behind these, none is dropped
        // between the books taken from memory and the first record written after them.
        written = w.writeMany(recs, { checkpoint: recs.map((r) => isFullBook(r)) });
      }
      s.lastRecvTs = now;
      s.resync = resync;
      s.paused = null;
      this.paused.delete(s);
      if (written) await written;
    } catch (e) {
      if (e instanceof DiskError || DISK_ERROR_CODES.has((e as NodeJS.ErrnoException).code ?? '')) {
        // Still full. Quietly paused again with the same state: a failed try is not a state change.
        s.paused = p;
        s.resync = null;
        this.paused.add(s);
        return false;
      }
      s.paused = null;
      this.paused.delete(s);
      this.o.report(e as Error, s.key);
    }
    this.o.logger.warn({ ...where(s.key), errno: p.errno, paused_ms: Date.now() - p.at, dropped: p.dropped }, 'storage: writer resumed');
    return true;
  }
}
