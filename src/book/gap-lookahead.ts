// Gaps noticed after they began, known before the seconds they spoil are decided.
//
// A recorder writes a gap when it notices a loss, with `start_ts` back-dated to when the book was
// last known right: a `sequence_gap` comes about a second after its start, and the records received
// in between were already applied. The interval grid decides a bucket when the first record after
// its end arrives, so without looking ahead it served the second in which such a gap began. Every
// consumer of the grid (the `/snapshots?interval=` page, the replay's `book_snapshot_*` lines, the
// `book_snapshots` dataset) therefore reads GAP_LOOKAHEAD_MS past each record before applying it and
// notes the gap records met there. The rule, the same everywhere: a gap record spoils bucket
// [s, e) when its `start_ts` < e and its receive time is after s and either at most
// GAP_LOOKAHEAD_MS after e, or it is the first record received at or after e (a restart's
// `not_recording` gap covers the whole downtime, however long).

import type { GapReason, Recorded } from '../schema/observation.js';

/** How long after a bucket's end a back-dated gap record still takes the bucket away. */
export const GAP_LOOKAHEAD_MS = 30_000;

interface Span {
  readonly start: number;
  readonly recv: number;
  readonly reason: GapReason;
}

/** The back-dated gap records read ahead, in receive order. */
export class GapLookahead {
  private readonly spans: Span[] = [];
  private head = 0;

  /** Notes a record read ahead (in log order); only gaps that began before they were written count. */
  note(rec: Recorded): void {
    if (rec.type === 'gap' && rec.start_ts < rec.recv_ts) this.spans.push({ start: rec.start_ts, recv: rec.recv_ts, reason: rec.reason });
  }

  /** The reason of a noted gap that spoils [s, e), or null. Buckets must be asked in ascending order. */
  spoiler(s: number, e: number): GapReason | null {
    const spans = this.spans;
    while (this.head < spans.length && spans[this.head].recv <= s) this.head++;
    if (this.head > 1024 && this.head * 2 > spans.length) {
      spans.splice(0, this.head);
      this.head = 0;
    }
    for (let i = this.head; i < spans.length && spans[i].recv <= e + GAP_LOOKAHEAD_MS; i++) {
      if (spans[i].start < e) return spans[i].reason;
    }
    return null;
  }
}

/**
 * The items of `src` in order, each handed out only once every item received up to
 * GAP_LOOKAHEAD_MS after it has been read and noted in `ahead`.
 */
export async function* readingAhead<T>(src: AsyncIterable<T>, recOf: (x: T) => Recorded, ahead: GapLookahead): AsyncGenerator<T> {
  const it = src[Symbol.asyncIterator]();
  const queue: T[] = [];
  let qh = 0;
  let ended = false;
  const pull = async (): Promise<boolean> => {
    const n = await it.next();
    if (n.done) {
      ended = true;
      return false;
    }
    queue.push(n.value);
    ahead.note(recOf(n.value));
    return true;
  };
  try {
    for (;;) {
      if (qh === queue.length && (ended || !(await pull()))) return;
      const x = queue[qh];
      const horizon = recOf(x).recv_ts + GAP_LOOKAHEAD_MS;
      while (!ended && recOf(queue[queue.length - 1]).recv_ts <= horizon) await pull();
      queue[qh++] = undefined as T; // handed out: not kept alive by the queue
      if (qh > 4096 && qh * 2 > queue.length) {
        queue.splice(0, qh);
        qh = 0;
      }
      yield x;
    }
  } finally {
    await it.return?.();
  }
}
