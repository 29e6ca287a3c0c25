// The shared base of every recorder kind (Tardis-style feed base): counters, bounded-rate error
// reporting, writes through the LogSink, and gap bookkeeping. Transport helpers live beside it
// (ws-connection.ts: connect/backoff/heartbeat/stale timer; rest.ts: rate budget, 429, 5xx).
// Rule: a recorder never throws on upstream input; a lost feed becomes a gap record.

import type { Config } from '../config.js';
import { RecorderError, type RecorderErrorCode } from '../errors.js';
import type { Family, Gap, GapReason, Observation } from '../schema/observation.js';
import type { LogKey } from '../storage/index.js';
import { recorderErrors, recorderGaps, recorderMessages } from '../metrics.js';
import type { LogSink } from './sink.js';

// The logger contract lives apart so the sink can log without importing the recorder base.
import type { RecorderLogger } from './logger.js';
export { silentLogger, type RecorderLogger } from './logger.js';

// Recorder error codes live in the one registry (src/errors.ts); re-exported for the kinds.
export { RecorderError, type RecorderErrorCode };

/** Result labels of `pmtape_recorder_messages_total`. */
export type MessageResult = 'ok' | 'ignored' | 'malformed' | 'unknown_type' | 'duplicate';

/** What a recorder reports in the status file, per kind. */
export interface KindStatus {
  readonly connected: boolean;
  readonly last_message_ts: number | null;
  readonly last_write_ts: number | null;
  readonly messages: number;
  readonly errors: number;
  readonly gaps: number;
}

/** Everything a recorder gets from its host. */
export interface RecorderDeps {
  readonly config: Config;
  readonly logger: RecorderLogger;
  readonly sink: LogSink;
  /** The hash shard filter of this process (`config.shard`). */
  readonly inShard: (marketId: string) => boolean;
  /** Objects shared between kinds of one process (e.g. the coin market directory). */
  readonly shared: Map<string, unknown>;
  /** Every error any recorder reports (after counting and rate-limited logging). */
  readonly onError?: (kind: string, err: RecorderError) => void;
}

interface OpenGap {
  readonly reason: GapReason;
  readonly start_ts: number;
}

/** A closed gap found after the fact, held until the market's next record (holdClosedGap). */
interface HeldGap {
  readonly key: LogKey;
  readonly reason: GapReason;
  start: number;
  end: number;
  recvTs: number;
  readonly detail?: string;
  /** Books whose divergence this row marks: each must find it within the next few records. */
  books: number;
}

/** A held gap is written after this long even if its market says nothing more. */
const HOLD_MS = 1000;
/** At most this many books share one held row (so the first of them is at most two records before it). */
const HOLD_MAX_BOOKS = 3;

export abstract class Recorder {
  /** Kind name: `clob`, `catalog`, `yesno`, `wallet`. */
  abstract readonly kind: string;
  /** The route family whose markets this kind records (status file `connected`). */
  abstract readonly family: Family;

  protected messages = 0;
  protected errors = 0;
  protected gapCount = 0;
  protected lastMessageTs: number | null = null;
  protected stopping = false;
  private readonly openGaps = new Map<string, OpenGap>();
  private readonly heldGaps = new Map<string, HeldGap>();
  private heldTimer: NodeJS.Timeout | null = null;
  private readonly logLimiter = new Map<string, { last: number; suppressed: number }>();
  private readonly unreportedMessages: Record<MessageResult, number> = { ok: 0, ignored: 0, malformed: 0, unknown_type: 0, duplicate: 0 };
  private unreportedTotal = 0;

  constructor(protected readonly deps: RecorderDeps) {}

  abstract start(): Promise<void>;
  /** Stops timers and connections and writes final records; the host then closes the sink. */
  abstract stop(): Promise<void>;
  /** True while the upstream feed is live. */
  abstract isConnected(): boolean;
  /** Market ids currently recorded live (the read side flags others `stale`). */
  abstract connectedMarkets(): string[];

  /**
   * Every book of `key`'s market as this recorder holds it now, stamped `recvTs`, for a writer
   * that resumes after a disk pause (its log lost records: it must restart from whole books).
   * Null when the kind keeps no live books or they are not valid now; the storage_error gap then
   * closes at the next full book the kind writes anyway (yes/no polls, wallet pushes).
   */
  fullBooks(_key: LogKey, _recvTs: number): readonly Observation[] | null {
    return null;
  }

  status(): KindStatus {
    this.flushMetrics();
    return {
      connected: this.isConnected(),
      last_message_ts: this.lastMessageTs,
      last_write_ts: this.deps.sink.lastWriteTs || null,
      messages: this.messages,
      errors: this.errors,
      gaps: this.gapCount,
    };
  }

  /** Counts one upstream message (and remembers when the feed last spoke). */
  protected countMessage(result: MessageResult, recvTs = Date.now()): void {
    this.messages++;
    this.lastMessageTs = recvTs;
    // Batched into prom-client (a labelled inc per message costs more than the message).
    this.unreportedMessages[result]++;
    if (++this.unreportedTotal >= 256) this.flushMetrics();
  }

  /** Pushes batched message counts into the metrics registry (also done by `status()`). */
  flushMetrics(): void {
    for (const [result, n] of Object.entries(this.unreportedMessages)) {
      if (n > 0) recorderMessages.inc({ kind: this.kind, result }, n);
      this.unreportedMessages[result as MessageResult] = 0;
    }
    this.unreportedTotal = 0;
  }

  /** Counts, logs (at most once per code per 5 s) and forwards an error. Never throws. */
  protected reportError(code: RecorderErrorCode, message: string, detail?: unknown): void {
    this.errors++;
    recorderErrors.inc({ kind: this.kind, code });
    const err = new RecorderError(code, message, detail);
    const now = Date.now();
    const lim = this.logLimiter.get(code) ?? { last: 0, suppressed: 0 };
    if (now - lim.last >= 5000) {
      this.deps.logger.warn({ kind: this.kind, code, suppressed: lim.suppressed, detail }, message);
      lim.last = now;
      lim.suppressed = 0;
    } else {
      lim.suppressed++;
    }
    this.logLimiter.set(code, lim);
    try {
      this.deps.onError?.(this.kind, err);
    } catch {
      // a faulty callback must not take the recorder down
    }
  }

  // ---- gap bookkeeping (per books log) ----

  /** True while `key` has an open gap (its books are invalid). */
  protected gapOpen(key: LogKey): boolean {
    return this.openGaps.has(key.market);
  }

  /**
   * Marks the books of `key` invalid from `startTs`: writes a gap with `end_ts: null` unless one
   * is already open (the first reason wins; the span is one hole).
   */
  protected openGap(key: LogKey, reason: GapReason, startTs: number, recvTs = Date.now(), detail?: string, reassert = false): void {
    this.flushHeldGap(key);
    const open = this.openGaps.get(key.market);
    if (open && !reassert) return;
    // Re-asserting an open gap (same reason and start) tells readers that books which became
    // valid again inside the hole (one token fresh, the other not yet) are invalid once more.
    const g = open ?? { reason, start_ts: Math.min(startTs, recvTs) };
    this.openGaps.set(key.market, g);
    const gap: Gap = {
      type: 'gap',
      recv_ts: recvTs,
      source_ts: null,
      origin: 'recorder',
      reason: g.reason,
      start_ts: g.start_ts,
      end_ts: null,
      ...(detail ? { detail } : {}),
    };
    this.deps.sink.write(key, gap);
  }

  /**
   * Writes an already closed gap (a hole found after the fact, e.g. a book that had silently
   * drifted): coverage loses the span, books stay valid. Does not touch an open gap.
   */
  protected writeClosedGap(key: LogKey, reason: GapReason, startTs: number, endTs: number, recvTs: number, detail?: string): void {
    this.gapCount++;
    recorderGaps.inc({ kind: this.kind, reason });
    const gap: Gap = {
      type: 'gap',
      recv_ts: recvTs,
      source_ts: null,
      origin: 'recorder',
      reason,
      start_ts: Math.min(startTs, endTs),
      end_ts: endTs,
      ...(detail ? { detail } : {}),
    };
    void this.deps.sink.append(key, gap);
  }

  /**
   * One hole, one closed row, and still a mark after every book that revealed it. A lost change
   * usually drifts every book of the market, and the venue resends them one message each after a
   * trade: each book's divergence was written as its own row with the same start (a zero-length
   * one, then the same gap again with a later end: counting closed gaps over-counted). So the row is
   * held until the market's next record: a book of the same hole (its span overlaps the held one)
   * widens it, anything else (`flushHeldGap`, called before every other record of the market, and
   * by a 1 s timer) writes it first. The row thus always directly follows the last book it marks,
   * with the others of its hole just before.
   */
  protected holdClosedGap(key: LogKey, reason: GapReason, startTs: number, endTs: number, recvTs: number, detail?: string): void {
    const start = Math.min(startTs, endTs);
    const h = this.heldGaps.get(key.market);
    if (h && h.reason === reason && start <= h.end && h.books < HOLD_MAX_BOOKS) {
      h.start = Math.min(h.start, start);
      h.end = Math.max(h.end, endTs);
      h.recvTs = Math.max(h.recvTs, recvTs);
      h.books++;
      return;
    }
    this.flushHeldGap(key);
    this.heldGaps.set(key.market, { key, reason, start, end: endTs, recvTs, detail, books: 1 });
    if (this.heldTimer === null) {
      this.heldTimer = setTimeout(() => {
        this.heldTimer = null;
        this.flushHeldGaps();
      }, HOLD_MS);
      this.heldTimer.unref();
    }
  }

  /** Writes the held after-the-fact gap of `key`, if any (before any other record of its market). */
  protected flushHeldGap(key: LogKey): void {
    const h = this.heldGaps.get(key.market);
    if (!h) return;
    this.heldGaps.delete(key.market);
    this.writeClosedGap(h.key, h.reason, h.start, h.end, h.recvTs, h.detail);
  }

  /** Writes every held gap (the timer, and a stop before the final records). */
  protected flushHeldGaps(): void {
    if (this.heldTimer !== null) clearTimeout(this.heldTimer);
    this.heldTimer = null;
    for (const h of [...this.heldGaps.values()]) this.flushHeldGap(h.key);
  }

  /** Closes the open gap of `key` (a fresh full book arrived at `endTs`): writes both ends. */
  protected closeGap(key: LogKey, endTs: number, recvTs = endTs): void {
    this.flushHeldGap(key);
    const g = this.openGaps.get(key.market);
    if (!g) return;
    this.openGaps.delete(key.market);
    this.gapCount++;
    recorderGaps.inc({ kind: this.kind, reason: g.reason });
    const gap: Gap = {
      type: 'gap',
      recv_ts: recvTs,
      source_ts: null,
      origin: 'recorder',
      reason: g.reason,
      start_ts: g.start_ts,
      end_ts: Math.max(endTs, g.start_ts),
    };
    void this.deps.sink.append(key, gap);
  }

  /** Forgets an open gap without writing (the market is no longer recorded). */
  protected dropGap(key: LogKey): void {
    this.flushHeldGap(key);
    this.openGaps.delete(key.market);
  }

  /**
   * On (re)start: a log whose newest record is an open gap keeps that gap open (closed by the
   * next fresh book); any other non-empty log gets a `not_recording` gap from its last record.
   */
  protected async resumeGap(key: LogKey, recvTs = Date.now()): Promise<void> {
    const last = await this.deps.sink.lastRecord(key);
    if (!last) return;
    if (last.type === 'gap' && last.end_ts === null) {
      this.openGaps.set(key.market, { reason: last.reason, start_ts: last.start_ts });
      return;
    }
    this.openGap(key, 'not_recording', last.recv_ts, Math.max(recvTs, last.recv_ts), 'recorder was not running');
  }
}

/**
 * A recorder kind as a family descriptor lists it: its name, the kinds it needs in the same
 * process, and a factory. Beside the base class so a feed never imports the host that starts it.
 */
export interface RecorderKind {
  readonly kind: string;
  /** Kinds that must run before this one in the same process (clob needs catalog's directory). */
  readonly requires?: readonly string[];
  create(deps: RecorderDeps): Recorder;
}
