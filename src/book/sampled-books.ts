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
  /** The book observation just before the checkpoint a reader starts at (see seedFrom). */
  private seed: Recorded | null = null;

  /** `tokens`: the outcome tokens that must be valid (ignored for yes/no). */
  constructor(
    private readonly mode: SampledMarket,
    readonly tokens: readonly string[],
  ) {}

  /**
   * Before replaying from the checkpoint at `cp` (LogView.checkpointAtOrBefore): looks back for the
   * book observation that checkpoint restates, which a sample then names (as a replay that started
   * earlier would). A few records back at most; none found, the checkpoint stands in.
   */
  async seedFrom<P>(view: { backward(before: P): AsyncIterable<{ readonly rec: Recorded }> }, cp: P): Promise<void> {
    let n = 0;
    for await (const { rec } of view.backward(cp)) {
      if (rec.type === 'book' || rec.type === 'book_delta' || rec.type === 'yesno_book') {
        this.seed = rec;
        return;
      }
      if (rec.type === 'gap' || rec.type === 'book_checkpoint' || ++n >= 64) return;
    }
  }

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
    // Checkpoints restate the book, so a sample names the observation that made it; only when a
    // checkpoint is what made the books valid (replay start, or after a gap) does it stand in, and
    // then as the observation before it when the reader knows it (`seed`): a page or a compaction
    // starts at a checkpoint, a replay at the book before it, and all name the same record.
    if (changed.length > 0 && (rec.type === 'book' || rec.type === 'book_delta' || rec.type === 'yesno_book')) this.lastBook = rec;
    else if (changed.length > 0 && rec.type === 'book_checkpoint' && (!was || this.lastBook === null)) this.lastBook = this.seed ?? rec;
    this.seed = null;
    const now = this.valid();
    if (!was && now) this.validSince = rec.recv_ts;
    else if (was && !now) this.validSince = null;
  }
}
