// The recorders' door to storage: one LogWriter per (family, stream, market), opened lazily, with
// appends kept in call order and failures reported instead of thrown. Live recorders ask for a
// monotonic receive clock (a record never goes behind its log's tail, even if the wall clock steps).
// Between `beginFrame()` and `endFrame()` hot-path writes to one log are grouped into one appendMany.

import { openWriter } from '../storage/index.js';
import type { AppendOptions, LogKey, LogWriter, WriterOptions } from '../storage/index.js';
import type { Observation, Recorded } from '../schema/observation.js';
import { DISK_ERROR_CODES } from '../errors.js';
import { logBytesWritten, logRecordsWritten } from '../metrics.js';
import { silentLogger, type RecorderLogger } from './logger.js';
import { isFullBook, StoragePause, type PauseState, type Resyncing, type StorageStats } from './storage-pause.js';

export interface SinkOptions {
  /** Clamp `recv_ts` to the log's newest so a stepped wall clock cannot make an append fail. */
  readonly monotonic?: boolean;
  readonly writer?: WriterOptions;
  /** Called for every failed open/append but the disk's; the sink never throws into a recorder. */
  readonly onError?: (err: Error, key: LogKey) => void;
  /** Pause writers below this many free bytes (0 or absent: only when the disk refuses a write). */
  readonly minFreeBytes?: number;
  /** Where paused/resumed lines go (one per writer state change, a summary every 30 s). */
  readonly logger?: RecorderLogger;
  /** Retry backoff bounds while paused (ms; default [250, 5000]). */
  readonly retryMs?: readonly [number, number];
}

/** Full books of a market from a recorder's memory, for a writer resuming after a disk pause. */
export type Resync = (key: LogKey, recvTs: number) => readonly Observation[] | null;

interface Slot {
  readonly key: LogKey;
  writer: LogWriter | null;
  opening: Promise<LogWriter | null>;
  lastRecvTs: number;
  /** Writes queued while the writer was still opening. */
  pending: number;
  onError: (e: unknown) => void;
  /** Records held by the current frame (already clamped), with their checkpoint flags. */
  group: Observation[] | null;
  groupCps: boolean[];
  groupKey: LogKey | null;
  /** While the disk refuses this log's writes: records are dropped (storage-pause.ts). */
  paused: PauseState | null;
  /** After a resume without full books: the gap's start; deltas wait for the next full book. */
  resync: Resyncing | null;
}

export function keyId(key: LogKey): string {
  return `${key.family}\u0000${key.stream}\u0000${key.market}`;
}

export class LogSink {
  private readonly slots = new Map<string, Slot>();
  private readonly byKeyObject = new WeakMap<LogKey, { id: string; slot: Slot }>();
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;
  /** Time of the newest successful append (status file `last_write_ts`). */
  lastWriteTs = 0;
  appended = 0;
  private unreportedRecords = 0;
  private unreported: Record<string, number> = {};
  private framing = false;
  private readonly framed: Slot[] = [];
  private readonly pause: StoragePause;
  /** Set by the recorder host once its recorders exist. */
  resync: Resync = () => null;

  constructor(
    readonly dataDir: string,
    private readonly opts: SinkOptions = {},
  ) {
    this.pause = new StoragePause(dataDir, {
      minFreeBytes: opts.minFreeBytes ?? 0,
      logger: opts.logger ?? silentLogger,
      retryMs: opts.retryMs,
      open: async (p) => {
        const slot = p as Slot;
        const w = await openWriter(this.dataDir, slot.key, this.writerOptions(slot.key));
        slot.writer = w;
        slot.opening = Promise.resolve(w); // settle() and close() find it there
        slot.lastRecvTs = Math.max(slot.lastRecvTs, w.lastRecord()?.recv_ts ?? 0);
        return w;
      },
      resync: (key, ts) => this.resync(key, ts),
      slots: () => this.slots.values(),
      report: (e, key) => this.opts.onError?.(e, key),
    });
  }

  /** Paused writers, records dropped while paused, free bytes of the data dir (status file). */
  storageStats(): StorageStats {
    return this.pause.stats();
  }

  private slot(key: LogKey): Slot {
    // Feeds pass the same key object for every record of a market: skip building the id string.
    const cached = this.byKeyObject.get(key);
    if (cached && this.slots.get(cached.id) === cached.slot) return cached.slot;
    const id = keyId(key);
    let s = this.slots.get(id);
    if (s) this.byKeyObject.set(key, { id, slot: s });
    if (!s) {
      const slot: Slot = {
        key,
        writer: null,
        opening: Promise.resolve(null),
        lastRecvTs: 0,
        pending: 0,
        onError: (e) => this.pause.failed(slot, e),
        group: null,
        groupCps: [],
        groupKey: null,
        paused: null,
        resync: null,
      };
      if (this.pause.guardActive) this.pause.pause(slot, 'min_free_bytes', 'free space below storage.min_free_bytes');
      slot.opening = (async () => {
        try {
          const w = await openWriter(this.dataDir, key, this.writerOptions(key));
          slot.writer = w;
          slot.lastRecvTs = Math.max(slot.lastRecvTs, w.lastRecord()?.recv_ts ?? 0);
          return w;
        } catch (e) {
          if (DISK_ERROR_CODES.has((e as NodeJS.ErrnoException).code ?? '')) {
            // The disk cannot even hold the folder or lock: pause; the retry opens it later.
            this.pause.pause(slot, (e as NodeJS.ErrnoException).code!, (e as Error).message);
            return null;
          }
          this.opts.onError?.(e as Error, key);
          this.slots.delete(id);
          return null;
        }
      })();
      this.slots.set(id, slot);
      this.byKeyObject.set(key, { id, slot });
      s = slot;
    }
    return s;
  }

  /** The writer options of `key`: the caller's, with every fsynced batch's bytes counted by stream. */
  private writerOptions(key: LogKey): WriterOptions {
    const base = this.opts.writer ?? {};
    const onCommit = base.onCommit;
    const stream = key.stream;
    return {
      ...base,
      onCommit: (bytes, records) => {
        logBytesWritten.inc({ stream }, bytes);
        onCommit?.(bytes, records);
      },
    };
  }

  /** Opens (or returns) the writer of `key`; null when it cannot be opened (reported). */
  async writer(key: LogKey): Promise<LogWriter | null> {
    return this.slot(key).opening;
  }

  /** The newest record of `key` (after crash recovery), or null. */
  async lastRecord(key: LogKey): Promise<Recorded | null> {
    const w = await this.writer(key);
    return w ? w.lastRecord() : null;
  }

  /**
   * Appends in call order. Resolves with the acknowledged (fsynced) record, or null when the
   * append failed (already reported through `onError`). Never rejects.
   */
  append(key: LogKey, obs: Observation, opts?: AppendOptions): Promise<Recorded | null> {
    if (this.closed) return Promise.resolve(null);
    const s = this.slot(key);
    if ((s.paused !== null || s.resync !== null) && this.diverted(s, obs, opts)) return Promise.resolve(null);
    if (s.group) this.flushGroup(s); // records held by the frame go first
    if (s.writer) return this.appendTo(s, key, obs, opts, true);
    return s.opening.then((w) => (w ? this.appendTo(s, key, obs, opts, true) : null));
  }

  /**
   * Fire-and-forget append for the hot path (one promise less per record): same ordering and
   * error reporting as `append`; `settle()` waits for it.
   */
  write(key: LogKey, obs: Observation, opts?: AppendOptions): void {
    if (this.closed) return;
    const s = this.slot(key);
    if ((s.paused !== null || s.resync !== null) && this.diverted(s, obs, opts)) return;
    if (s.writer) {
      if (this.framing) this.hold(s, key, obs, opts);
      else this.appendTo(s, key, obs, opts, false);
      return;
    }
    s.pending++;
    const p = s.opening.then((w) => {
      s.pending--;
      if (w) this.appendTo(s, key, obs, opts, false);
      else if (s.paused) this.pause.drop(s, obs.recv_ts); // the open met a full disk
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /**
   * A record for a paused log is dropped (counted). After a resume that had no full books at hand
   * (storage-pause.ts, Resyncing), a delta is dropped unless its token had a full book since; the
   * first full book is followed by the gap's closing record. True when the record was consumed here.
   */
  private diverted(s: Slot, obs: Observation, opts: AppendOptions | undefined): boolean {
    const r = s.resync;
    if (s.paused !== null || (obs.type === 'book_delta' && !r!.fresh.has(obs.token_id))) {
      this.pause.drop(s, obs.recv_ts);
      return true;
    }
    if (!isFullBook(obs)) return false;
    if (obs.type === 'book') r!.fresh.add(obs.token_id);
    else s.resync = null; // a checkpoint (every valid book) or a yes/no book (the whole market)
    if (r!.closed) return false;
    r!.closed = true;
    this.write(s.key, obs, opts);
    const end = Math.max(obs.recv_ts, s.lastRecvTs);
    this.write(s.key, this.pause.gap(r!.since, end, end));
    return true;
  }

  /**
   * Starts a frame: `write`s to open logs are held until `endFrame()`, then each log's records go
   * to storage in one appendMany (one promise and one batch entry instead of one per record).
   * Order per log is kept: an `append` or `closeKey` of a log first issues what the frame holds.
   */
  beginFrame(): void {
    this.framing = true;
  }

  /** Issues every record held since `beginFrame()`. */
  endFrame(): void {
    this.framing = false;
    for (let i = 0; i < this.framed.length; i++) if (this.framed[i].group) this.flushGroup(this.framed[i]);
    this.framed.length = 0;
  }

  /**
   * The one place the monotonic clock is applied: with `monotonic`, a record older than its log's
   * newest takes the newest's time; either way the slot learns the newest time.
   */
  private clamp(s: Slot, obs: Observation): Observation {
    let o = obs;
    if (this.opts.monotonic && o.recv_ts < s.lastRecvTs) o = { ...o, recv_ts: s.lastRecvTs };
    if (o.recv_ts > s.lastRecvTs) s.lastRecvTs = o.recv_ts;
    return o;
  }

  private hold(s: Slot, key: LogKey, obs: Observation, opts: AppendOptions | undefined): void {
    const o = this.clamp(s, obs);
    if (!s.group) {
      s.group = [];
      s.groupCps.length = 0;
      s.groupKey = key;
      this.framed.push(s);
    }
    s.group.push(o);
    s.groupCps.push(opts?.checkpoint === true);
  }

  /** Issues a slot's held records (already clamped): one append, or one appendMany for several. */
  private flushGroup(s: Slot): void {
    const list = s.group!;
    const key = s.groupKey!;
    s.group = null;
    s.groupKey = null;
    const w = s.writer;
    if (!w || list.length === 0) return;
    let p: Promise<unknown>;
    try {
      if (list.length === 1) p = w.write(list[0], s.groupCps[0] ? { checkpoint: true } : undefined);
      else p = w.writeMany(list, s.groupCps.includes(true) ? { checkpoint: s.groupCps.slice() } : undefined);
    } catch (e) {
      this.opts.onError?.(e as Error, key);
      return;
    }
    this.counted(key, list.length, list[list.length - 1].recv_ts);
    p.catch(s.onError);
  }

  private counted(key: LogKey, n: number, recvTs: number): void {
    this.appended += n;
    this.unreported[key.stream] = (this.unreported[key.stream] ?? 0) + n;
    this.unreportedRecords += n;
    // The time of the newest append issued (acknowledged within the fsync interval).
    this.lastWriteTs = recvTs;
    if (this.unreportedRecords >= 256) this.reportMetrics();
  }

  private appendTo(s: Slot, key: LogKey, obs: Observation, opts: AppendOptions | undefined, wantResult: false): undefined;
  private appendTo(s: Slot, key: LogKey, obs: Observation, opts: AppendOptions | undefined, wantResult: true): Promise<Recorded | null>;
  private appendTo(
    s: Slot,
    key: LogKey,
    obs: Observation,
    opts: AppendOptions | undefined,
    wantResult: boolean,
  ): Promise<Recorded | null> | undefined {
    const w = s.writer!;
    const o = this.clamp(s, obs);
    if (!wantResult) {
      try {
        w.write(o, opts).catch(s.onError); // no Recorded kept for a result nobody reads
      } catch (e) {
        this.opts.onError?.(e as Error, key);
        return undefined;
      }
      this.counted(key, 1, o.recv_ts);
      return undefined;
    }
    let p: Promise<Recorded>;
    try {
      p = w.append(o, opts);
    } catch (e) {
      this.opts.onError?.(e as Error, key);
      return Promise.resolve(null);
    }
    this.counted(key, 1, o.recv_ts);
    return p.catch((e: unknown) => {
      s.onError(e);
      return null;
    });
  }

  private reportMetrics(): void {
    for (const [stream, n] of Object.entries(this.unreported)) if (n > 0) logRecordsWritten.inc({ stream }, n);
    this.unreported = {};
    this.unreportedRecords = 0;
  }

  /** True when any open writer reports backpressure. */
  get backpressure(): boolean {
    for (const s of this.slots.values()) if (s.writer?.backpressure) return true;
    return false;
  }

  /** Waits until every writer has drained below its high-water mark. */
  async drained(): Promise<void> {
    for (const s of this.slots.values()) if (s.writer?.backpressure) await s.writer.drained();
  }

  /** Waits for every append issued so far to be acknowledged (fsynced). */
  async settle(): Promise<void> {
    this.endFrame();
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
    this.reportMetrics();
    await Promise.all(
      [...this.slots.values()].map(async (s) => {
        const w = await s.opening;
        await w?.flush().catch(() => undefined);
      }),
    );
  }

  /** Flushes and closes one log (e.g. a market that is no longer recorded). */
  async closeKey(key: LogKey): Promise<void> {
    const id = keyId(key);
    const s = this.slots.get(id);
    if (!s) return;
    if (s.group) this.flushGroup(s);
    this.slots.delete(id);
    this.pause.forget(s);
    while (s.pending > 0) await Promise.all([...this.inflight]);
    const w = await s.opening;
    await w?.close().catch((e: unknown) => this.opts.onError?.(e as Error, key));
  }

  /** Waits for pending appends, then flushes, fsyncs and closes every writer. */
  async close(): Promise<void> {
    await this.settle();
    this.closed = true;
    this.pause.close();
    const all = [...this.slots.values()];
    this.slots.clear();
    await Promise.all(
      all.map(async (s) => {
        const w = await s.opening;
        await w?.close().catch(() => undefined);
      }),
    );
  }
}
