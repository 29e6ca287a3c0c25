// One follower per streamed market, shared by all its subscribers: it tails the market's books log
// through the storage reader (so `serve` streams what another `record` process appends), keeps the
// book state, shapes each message once per view and hands the same string to every subscriber.
// The follower starts with the first subscriber and stops when the last one leaves.

import { streamMessages } from '../../metrics.js';
import type { Recorded } from '../../schema/observation.js';
import type { LogReader, Position, ReadItem } from '../../storage/index.js';
import { prepareMessage, type PreparedMessage } from './protocol.js';
import { StreamTracker, type ModelFactory, type StreamTarget, type TrackEvent } from './market.js';

/** A subscriber as the follower sees it: which view it wants and where live delivery starts. */
export interface FeedSubscriber {
  readonly variant: string | undefined;
  /** Live messages with seq ≤ this were already sent by the subscriber's history replay. */
  skipThrough: number;
  /** Must not block: the client queues or drops it (a slow client never delays the others). */
  deliver(seq: number, msg: PreparedMessage): void;
}

export interface HubLog {
  warn(obj: object, msg: string): void;
}

export type ReaderFactory = (target: StreamTarget) => LogReader | Promise<LogReader>;

/** Back-off before re-following a log whose reader failed (a damaged file, a vanished folder). */
const RETRY_MS = 1000;
/** Records fanned out before the follower yields to the event loop. */
const BURST_RECORDS = 32;
/** Records scanned back from the end for the newest snapshot record when a follower starts. */
const WARMUP_SCAN = 10_000;

export class MarketFeed {
  readonly tracker: StreamTracker;
  readonly subscribers = new Set<FeedSubscriber>();
  /** The newest seq the follower has applied. Replays hand over once they have read this far. */
  lastSeq = 0;
  /** Resolves when the follower has read the log up to its end as of the start, and is live. */
  readonly ready: Promise<void>;
  reader: LogReader | null = null;
  private markReady!: () => void;
  private readonly ac = new AbortController();

  constructor(
    readonly key: string,
    readonly target: StreamTarget,
    modelFor: ModelFactory,
    private readonly openReader: ReaderFactory,
    private readonly log: HubLog,
  ) {
    this.tracker = new StreamTracker(target, modelFor);
    this.ready = new Promise((r) => (this.markReady = r));
  }

  get stopped(): boolean {
    return this.ac.signal.aborted;
  }

  async getReader(): Promise<LogReader> {
    this.reader ??= await this.openReader(this.target);
    return this.reader;
  }

  /** Runs until stop(): warm-up from the newest checkpoint, then follow the tail. */
  async run(): Promise<void> {
    let from: Position | 'start' | null = null;
    let boundary = 0;
    let burst = 0;
    while (!this.stopped) {
      try {
        const reader = await this.getReader();
        if (from === null) {
          const latest = await reader.latest();
          boundary = latest?.rec.seq ?? 0;
          from = latest ? await this.warmUpFrom(reader, latest) : 'start';
        }
        if (this.lastSeq >= boundary) this.markReady();
        for await (const item of reader.follow(from, this.ac.signal)) {
          if (item.rec.seq <= this.lastSeq) continue; // a re-follow after an error starts inclusive
          from = item.pos;
          const ev = this.tracker.apply(item.rec);
          this.lastSeq = item.rec.seq;
          if (this.lastSeq < boundary) continue; // warm-up: state only, nobody is attached yet
          this.markReady();
          if (ev !== null && this.subscribers.size > 0) this.fanOut(ev, item.rec);
          // Let sockets flush between bursts: a backlog read in one go must not fill every
          // client's buffer before any of them had a turn to drain it.
          if (++burst % BURST_RECORDS === 0) await new Promise((r) => setImmediate(r));
        }
      } catch (err) {
        if (this.stopped) break;
        this.log.warn({ err, market: this.target.logMarket, family: this.target.family }, 'stream follower failed; retrying');
        await new Promise((r) => setTimeout(r, RETRY_MS).unref());
      }
    }
  }

  /**
   * Where to rebuild the current books from: the newest checkpoint before the newest record that
   * can be a snapshot (so the first message of a live subscriber carries that snapshot's seq even
   * when a checkpoint was written after it), instead of the whole history.
   */
  private async warmUpFrom(reader: LogReader, latest: ReadItem): Promise<Position | 'start'> {
    const model = this.tracker.model(undefined);
    let anchor: ReadItem | null = null;
    for await (const it of reader.readBackward('end', { limit: WARMUP_SCAN })) {
      if (model.candidate(it.rec)) {
        anchor = it;
        break;
      }
    }
    if (!anchor) {
      // No snapshot record lately: only the state matters, the newest checkpoint holds it.
      const newest = await reader.checkpointAtOrBefore(latest.rec.recv_ts);
      return newest ? newest.pos : 'start';
    }
    let cp = await reader.checkpointAtOrBefore(anchor.rec.recv_ts);
    if (cp && cp.rec.seq >= anchor.rec.seq) cp = anchor.rec.recv_ts > 0 ? await reader.checkpointAtOrBefore(anchor.rec.recv_ts - 1) : null;
    return cp && cp.rec.seq < anchor.rec.seq ? cp.pos : 'start';
  }

  /** Shapes the message once per view and gives the same string to every attached subscriber. */
  private fanOut(ev: TrackEvent, rec: Recorded): void {
    // Encoded once: a thousand subscribers share one buffer instead of a thousand conversions.
    const byVariant = new Map<string | undefined, PreparedMessage | null>();
    let sent = 0;
    for (const sub of this.subscribers) {
      if (rec.seq <= sub.skipThrough) continue;
      let msg = byVariant.get(sub.variant);
      if (msg === undefined) {
        const text = this.tracker.messageFor(ev, rec, sub.variant);
        msg = text === null ? null : prepareMessage(text);
        byVariant.set(sub.variant, msg);
      }
      if (msg !== null) {
        sub.deliver(rec.seq, msg);
        sent++;
      }
    }
    if (sent > 0) streamMessages.inc(sent);
  }

  stop(): void {
    this.ac.abort();
    this.markReady(); // nobody waits forever on a feed that was stopped during warm-up
  }
}

const feedKey = (t: StreamTarget): string => `${t.family}\u0000${t.logMarket}`;

/** The set of running followers; counts subscribers so a follower lives exactly as long as needed. */
export class StreamHub {
  private readonly feeds = new Map<string, { feed: MarketFeed; refs: number }>();

  constructor(
    private readonly modelFor: ModelFactory,
    private readonly openReader: ReaderFactory,
    private readonly log: HubLog,
  ) {}

  /** The market's follower, started on first use. Each acquire() must be paired with release(). */
  acquire(target: StreamTarget): MarketFeed {
    const key = feedKey(target);
    let entry = this.feeds.get(key);
    if (!entry) {
      const feed = new MarketFeed(key, target, this.modelFor, this.openReader, this.log);
      entry = { feed, refs: 0 };
      this.feeds.set(key, entry);
      void feed.run();
    }
    entry.refs++;
    return entry.feed;
  }

  release(feed: MarketFeed, sub?: FeedSubscriber): void {
    if (sub) feed.subscribers.delete(sub);
    const entry = this.feeds.get(feed.key);
    if (!entry || entry.feed !== feed) return;
    if (--entry.refs <= 0) {
      this.feeds.delete(feed.key);
      feed.stop();
    }
  }

  /** Number of running followers (tests and the benchmark check that they stop). */
  get size(): number {
    return this.feeds.size;
  }

  stopAll(): void {
    for (const { feed } of this.feeds.values()) feed.stop();
    this.feeds.clear();
  }
}
