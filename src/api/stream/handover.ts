// History-to-live handover for one subscription. A subscriber with a resume point reads the log
// itself (the log is its buffer, so a long replay holds no live messages in memory), paced by its
// own socket, until it has read at least as far as the shared follower; then, with no await between
// that check and attaching, it joins the follower and takes only seqs above what it replayed.
// No seq is skipped (the follower only applies what is in the log, which the replay read past) and
// none is sent twice (live delivery starts above the replay's last seq).

import { streamMessages } from '../../metrics.js';
import type { Recorded } from '../../schema/observation.js';
import type { LogReader, Position } from '../../storage/index.js';
import type { FeedSubscriber, MarketFeed } from './hub.js';
import { StreamTracker, type ModelFactory } from './market.js';

/** Where a subscription starts, once `from` has been resolved (a cursor resolves to a seq). */
export type StartPoint =
  { readonly kind: 'live' } | { readonly kind: 'time'; readonly t: number } | { readonly kind: 'seq'; readonly startSeq: number };

export interface HandoverIo {
  /** Sends one message to the client. */
  send(msg: string): void;
  /** Resolves when the client's socket has room (replay is paced by the reader, not dropped). */
  writable(): Promise<void>;
  /** True once the client unsubscribed or disconnected. */
  cancelled(): boolean;
}

/** First record of the log with seq ≥ s, or null when there is none yet. */
async function recordAt(reader: LogReader, pos: Position | null): Promise<Recorded | null> {
  if (!pos) return null;
  for await (const item of reader.read(pos, { limit: 1 })) return item.rec;
  return null;
}

/** Attaches `sub` as a live-only subscriber: first the market's current state, then every change. */
function attachLive(feed: MarketFeed, sub: FeedSubscriber, io: HandoverIo): void {
  const cur = feed.tracker.currentMessage(sub.variant);
  if (cur) io.send(cur.msg);
  sub.skipThrough = feed.lastSeq;
  feed.subscribers.add(sub);
}

/**
 * Runs the handover; resolves once `sub` is attached to the follower (or the client went away).
 * Live-only subscriptions, and resume points past the end of the log, attach at once.
 */
export async function handover(
  feed: MarketFeed,
  sub: FeedSubscriber,
  start: StartPoint,
  modelFor: ModelFactory,
  io: HandoverIo,
): Promise<void> {
  await feed.ready;
  const reader = await feed.getReader();
  if (io.cancelled() || feed.stopped) return;
  if (start.kind === 'live') return attachLive(feed, sub, io);

  let startSeq: number;
  let first: Recorded | null;
  for (;;) {
    if (start.kind === 'time') {
      first = await recordAt(reader, await reader.seekTime(start.t));
      // Nothing recorded at or after t yet: the book as of t is the current one.
      if (!first) {
        if (io.cancelled()) return;
        return attachLive(feed, sub, io);
      }
      startSeq = first.seq;
    } else {
      startSeq = start.startSeq;
      first = await recordAt(reader, await reader.seekSeq(startSeq));
    }
    if (io.cancelled()) return;
    if (first) break;
    // Nothing at or after startSeq in the log. If the follower has not passed it either, every
    // later record will reach this subscriber live; otherwise something was appended meanwhile.
    if (feed.lastSeq < startSeq) {
      sub.skipThrough = startSeq - 1;
      feed.subscribers.add(sub);
      return;
    }
  }

  // Warm-up from the newest checkpoint at or before the first record, so the replayed books are
  // the same full books the follower and the REST snapshots hold.
  let cp = await reader.checkpointAtOrBefore(first.recv_ts);
  // A checkpoint in the same millisecond but after the first record does not hold its state.
  if (cp && cp.rec.seq > startSeq) cp = first.recv_ts > 0 ? await reader.checkpointAtOrBefore(first.recv_ts - 1) : null;
  let readFrom: Position | 'start' = cp && cp.rec.seq <= startSeq ? cp.pos : 'start';
  const tracker = new StreamTracker(feed.target, modelFor);
  let replayed = 0; // the newest seq applied by this replay
  for (;;) {
    for await (const item of reader.read(readFrom)) {
      const rec = item.rec;
      if (rec.seq <= replayed) continue;
      const ev = tracker.apply(rec);
      replayed = rec.seq;
      readFrom = item.pos;
      if (ev === null || rec.seq < startSeq) continue;
      const msg = tracker.messageFor(ev, rec, sub.variant);
      if (msg === null) continue;
      await io.writable();
      if (io.cancelled()) return;
      io.send(msg);
      streamMessages.inc();
    }
    if (io.cancelled() || feed.stopped) return;
    // Synchronous from the check to the attach: the follower cannot apply a record in between.
    if (replayed >= feed.lastSeq) {
      sub.skipThrough = Math.max(replayed, startSeq - 1);
      feed.subscribers.add(sub);
      return;
    }
  }
}
