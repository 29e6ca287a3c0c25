// The book state of one streamed market, rebuilt record by record from its books log, and the rule
// for which records become stream messages: the same records that become REST snapshots (full
// books and deltas, never checkpoints) become `book` messages, and gap records become `gap` messages.
// Both the shared live follower and each subscriber's history replay use this one class.

import { MarketBooks } from '../../book/book-state.js';
import type { Market } from '../../schema/market.js';
import type { Family, Gap, Recorded } from '../../schema/observation.js';
import type { BookModel } from '../../book/book-model.js';
import { familyOf } from '../../families/registry.js';
import { bookMessage, gapMessage } from './protocol.js';

/** One market a client can subscribe to, resolved against the catalogue. */
export interface StreamTarget {
  readonly family: Family;
  /** `market` of the books log key. */
  readonly logMarket: string;
  /** How messages name the market. */
  readonly idField: 'market_id' | 'ticker';
  readonly id: string;
  /** The catalogue entry (outcomes, token ids), or null when the catalogue does not know it yet. */
  readonly market: Market | null;
}

/**
 * The read side's rule for one view of a market (`variant`: the wallet family's outcome label,
 * undefined elsewhere): which records make snapshots and their exact REST shape with the book.
 */
export type ModelFactory = (target: StreamTarget, variant: string | undefined) => BookModel;

export type TrackEvent = 'book' | 'gap' | null;

export class StreamTracker {
  readonly books = new MarketBooks();
  /** The newest record that produced a book message. */
  lastBookRec: Recorded | null = null;
  /** The gap in force (open, no book since), whose message stands for the market's state. */
  openGap: Recorded<Gap> | null = null;
  private readonly models = new Map<string | undefined, BookModel>();

  constructor(
    readonly target: StreamTarget,
    private readonly modelFor: ModelFactory,
  ) {}

  model(variant: string | undefined): BookModel {
    let m = this.models.get(variant);
    if (!m) {
      m = this.modelFor(this.target, variant);
      this.models.set(variant, m);
    }
    return m;
  }

  /** Applies one record; says whether it is worth a `book` or `gap` message. */
  apply(rec: Recorded): TrackEvent {
    const changed = this.books.apply(rec);
    if (rec.type === 'gap') {
      if (rec.end_ts === null) this.openGap = rec;
      else if (this.openGap && this.openGap.start_ts === rec.start_ts) this.openGap = null;
      return 'gap';
    }
    // Which records are snapshots is the REST rule (the view-independent part of it), so the
    // stream's seqs are exactly the snapshots route's seqs.
    const m = this.model(undefined);
    if (m.candidate(rec) && m.produces(rec, changed)) return this.bookSeen(rec);
    // A checkpoint after a re-snapshot makes the books valid again, as on REST.
    if (rec.type === 'book_checkpoint') this.openGap = null;
    return null;
  }

  private bookSeen(rec: Recorded): TrackEvent {
    this.lastBookRec = rec;
    this.openGap = null;
    return 'book';
  }

  /** The `book` message for `rec` (the record just applied), or null when the view has no valid book. */
  bookMessageFor(rec: Recorded, variant: string | undefined): string | null {
    const data = this.model(variant).shape(rec, this.books);
    return data === null ? null : bookMessage(this.target.family, rec.seq, data);
  }

  gapMessageFor(gap: Recorded<Gap>): string {
    return gapMessage({
      family: this.target.family,
      idField: this.target.idField,
      id: this.target.id,
      reason: gap.reason,
      startMs: gap.start_ts,
      endMs: gap.end_ts,
      seq: gap.seq,
      tokenId: gap.token_id,
    });
  }

  /** The message for `rec` if it produced an event: what followers fan out and replays send. */
  messageFor(ev: TrackEvent, rec: Recorded, variant: string | undefined): string | null {
    if (ev === 'book') return this.bookMessageFor(rec, variant);
    if (ev === 'gap') return this.gapMessageFor(rec as Recorded<Gap>);
    return null;
  }

  /**
   * The message standing for the market right now, sent first to a live-only subscriber: the open
   * gap when the feed is lost, otherwise the newest book (never a book from before an open gap).
   */
  currentMessage(variant: string | undefined): { seq: number; msg: string } | null {
    if (this.openGap) return { seq: this.openGap.seq, msg: this.gapMessageFor(this.openGap) };
    if (!this.lastBookRec) return null;
    const msg = this.bookMessageFor(this.lastBookRec, variant);
    return msg === null ? null : { seq: this.lastBookRec.seq, msg };
  }
}

/** Never produces anything: a coin or wallet market the catalogue does not describe (yet). */
const EMPTY: BookModel = { replay: true, candidate: () => false, produces: () => false, shape: () => null };

/**
 * The REST routes' own models (the family descriptor's), always with the book: a `book` message's
 * data is the REST snapshot object for the same seq, produced by the same code.
 */
export const streamModels: ModelFactory = (target: StreamTarget, variant: string | undefined): BookModel =>
  familyOf(target.family).bookModel(target.id, target.market, { outcome: variant, includeOrderbook: true }) ?? EMPTY;
