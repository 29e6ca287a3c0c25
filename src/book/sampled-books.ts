// A market's books as an interval grid samples them (book/interval-grid.ts): which books must be
// valid for the market to be, since when they have been, and the newest book record a sample names.
// Shared by the API's interval snapshots and the `book_snapshots` dataset.

import type { Recorded, YesNoBook } from '../schema/observation.js';
import { MarketBooks } from './book-state.js';
import type { GridBooks } from './interval-grid.js';

/** Which books make a market valid: each outcome's, the first outcome's only, or its whole yes/no book. */
export type SampledMarket = 'every_outcome' | 'first_outcome' | 'yesno';

export class SampledBooks implements GridBooks {
  readonly books = new MarketBooks();
  private yesno: Recorded<YesNoBook> | null = null;
  private yesnoGap = false;
  validSince: number | null = null;
  /** The record a sample of the current state names. */
  lastBook: Recorded | null = null;

  /** `tokens`: the outcome tokens that must be valid (ignored for yes/no). */
  constructor(private readonly mode: SampledMarket, readonly tokens: readonly string[]) {}

  valid(): boolean {
    if (this.mode === 'yesno') return this.yesno !== null && !this.yesnoGap;
    return this.tokens.length > 0 && this.tokens.every((t) => this.books.isValid(t));
  }

  /** The newest yes/no book (yes/no markets). */
  get yesnoBook(): Recorded<YesNoBook> | null {
    return this.yesno;
  }

  apply(rec: Recorded): void {
    const was = this.valid();
    let changed: readonly string[];
    if (rec.type === 'yesno_book') {
      this.yesno = rec;
      this.yesnoGap = false;
      changed = [''];
    } else {
      if (rec.type === 'gap' && rec.end_ts === null) this.yesnoGap = true;
      changed = this.books.apply(rec);
    }
    // A sample names the newest record that set or restated the books, a recorder checkpoint
    // included: which one that is must not depend on where a reader began (a page or a compaction
    // starts at a checkpoint, a replay at the book before it).
    if (changed.length > 0 && (rec.type === 'book' || rec.type === 'book_delta' || rec.type === 'yesno_book' || rec.type === 'book_checkpoint')) this.lastBook = rec;
    const now = this.valid();
    if (!was && now) this.validSince = rec.recv_ts;
    else if (was && !now) this.validSince = null;
  }
}
