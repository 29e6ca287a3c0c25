// Recorder-side rules over the shared MarketBooks (src/book/book-state.ts) for one market's token
// books: deltas for a token without a fresh snapshot are dropped (never applied to nothing, never
// recorded); the venue's reported top of book is checked after each delta and a mismatch asks the
// feed to resnapshot; a snapshot that disagrees with the rebuilt book reveals a silent loss; and
// checkpoint policy counters say when to write a full `book_checkpoint`.

import { MarketBooks } from '../book/book-state.js';
import type { BookCheckpoint, BookDelta, BookSnapshot, Level, PriceUnits } from '../schema/observation.js';

export interface CheckpointPolicy {
  readonly everyDeltas: number;
  readonly everyMs: number;
}

export type DeltaResult = 'applied' | 'dropped' | 'mismatch';

export interface BookResult {
  /** Set when the rebuilt book disagreed with this snapshot: it was wrong since this time. */
  readonly divergedSince: number | null;
  /** True when this snapshot completed a fresh set of books for every token of the market. */
  readonly completed: boolean;
}

function sameLadder(a: readonly Level[], b: readonly Level[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (Number(a[i][0]) !== Number(b[i][0]) || Number(a[i][1]) !== Number(b[i][1])) return false;
  }
  return true;
}

export class RecorderBooks {
  readonly books = new MarketBooks();
  /** Tokens with a snapshot since the market was last invalidated. */
  private readonly fresh = new Set<string>();
  /** When each token's book was last known right (snapshot or a matching top-of-book hint). */
  private readonly verifiedAt = new Map<string, number>();
  /** Cached best bid/ask per token (numbers), dropped whenever a snapshot replaces the book. */
  private readonly top = new Map<string, { bid: number | null; ask: number | null }>();
  private waiting = true;
  deltasSinceCheckpoint = 0;
  lastCheckpointTs = 0;
  droppedDeltas = 0;

  constructor(
    readonly tokens: readonly string[],
    private readonly policy: CheckpointPolicy,
    readonly units: PriceUnits = 'decimal',
  ) {}

  /** True while some token of the market has no fresh book (the market is in a gap or new). */
  get incomplete(): boolean {
    return this.waiting;
  }

  /** Invalidates every book (connection lost, data lost): deltas are dropped until fresh books. */
  invalidate(recvTs: number): void {
    this.books.apply({ type: 'gap', recv_ts: recvTs, source_ts: null, reason: 'disconnected', start_ts: recvTs, end_ts: null });
    this.fresh.clear();
    this.top.clear();
    this.waiting = true;
  }

  onBook(obs: BookSnapshot): BookResult {
    let divergedSince: number | null = null;
    const current = this.books.view(obs.token_id);
    if (current && !(sameLadder(current.bids, obs.bids) && sameLadder(current.asks, obs.asks))) {
      divergedSince = this.verifiedAt.get(obs.token_id) ?? obs.recv_ts;
    }
    this.books.apply(obs);
    this.top.delete(obs.token_id);
    this.fresh.add(obs.token_id);
    this.verifiedAt.set(obs.token_id, obs.recv_ts);
    let completed = false;
    if (this.waiting && this.tokens.every((t) => this.fresh.has(t))) {
      this.waiting = false;
      completed = true;
    }
    return { divergedSince, completed };
  }

  /** Applies a delta to a valid book, and checks the venue's reported top of book afterwards. */
  onDelta(obs: BookDelta): DeltaResult {
    if (!this.books.isValid(obs.token_id)) {
      this.droppedDeltas++;
      return 'dropped';
    }
    this.books.apply(obs);
    this.deltasSinceCheckpoint++;
    const top = this.topAfter(obs);
    if (obs.best_bid === undefined && obs.best_ask === undefined) return 'applied';
    const { bid, ask } = top;
    // A crossed or locked book is a venue mid-match: its hints already show the result (seen in
    // real captures), so the check waits for the book to uncross.
    if (bid !== null && ask !== null && bid >= ask) return 'applied';
    const bidOk = obs.best_bid === undefined || bid === null || Number(obs.best_bid) === bid;
    const askOk = obs.best_ask === undefined || ask === null || Number(obs.best_ask) === ask;
    if (bidOk && askOk) {
      this.verifiedAt.set(obs.token_id, obs.recv_ts);
      return 'applied';
    }
    return 'mismatch';
  }

  /**
   * Best bid/ask after a delta. Sorting a ladder per change is the hot path's biggest cost, so the
   * top is cached and recomputed only when a change reaches it (a change behind the best level
   * cannot move it).
   */
  private topAfter(obs: BookDelta): { bid: number | null; ask: number | null } {
    let top = this.top.get(obs.token_id);
    let dirty = top === undefined;
    if (top) {
      for (const c of obs.changes) {
        const p = Number(c.price);
        if (c.side === 'bid' ? top.bid === null || p >= top.bid : top.ask === null || p <= top.ask) dirty = true;
      }
    }
    if (dirty) {
      const v = this.books.view(obs.token_id, 1)!;
      top = { bid: v.bids[0] ? Number(v.bids[0][0]) : null, ask: v.asks[0] ? Number(v.asks[0][0]) : null };
      this.top.set(obs.token_id, top);
    }
    return top!;
  }

  /** When the token was last known right (start of a gap opened for a detected loss). */
  verifiedSince(tokenId: string, fallback: number): number {
    return this.verifiedAt.get(tokenId) ?? fallback;
  }

  checkpointDue(now: number): boolean {
    if (this.waiting || this.deltasSinceCheckpoint === 0) return false;
    return this.deltasSinceCheckpoint >= this.policy.everyDeltas || now - this.lastCheckpointTs >= this.policy.everyMs;
  }

  /** A checkpoint of every valid book (resets the policy counters), or null when none is valid. */
  checkpoint(recvTs: number): BookCheckpoint | null {
    const books = this.books.checkpointBooks();
    if (books.length === 0) return null;
    this.deltasSinceCheckpoint = 0;
    this.lastCheckpointTs = recvTs;
    return { type: 'book_checkpoint', recv_ts: recvTs, source_ts: null, origin: 'recorder', units: this.units, books };
  }
}
