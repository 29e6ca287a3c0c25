// Receive order for `pmtape import` without holding the input: each file passes through a bounded
// reorder window (captures written by concurrent tasks are a little out of order), and the files
// are merged by receive time. Memory is the window (a count and a byte bound), never the file; a
// message further out of order than the window reaches its log after a newer one and is counted
// as too old there.

import type { CapturedMessage } from './capture.js';

export interface Timed {
  readonly m: CapturedMessage;
  readonly recvTs: number;
  /** Position in its file: ties keep file order. */
  readonly seq: number;
  readonly file: number;
}

const before = (a: Timed, b: Timed): boolean =>
  a.recvTs < b.recvTs || (a.recvTs === b.recvTs && (a.file < b.file || (a.file === b.file && a.seq < b.seq)));

/** A binary min-heap in receive order. */
class Heap {
  private readonly a: Timed[] = [];
  get size(): number {
    return this.a.length;
  }
  push(x: Timed): void {
    const a = this.a;
    a.push(x);
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (!before(a[i], a[p])) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }
  pop(): Timed | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l], a[m])) m = l;
        if (r < a.length && before(a[r], a[m])) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}

/**
 * `source` in receive order as far as a window can put it: at most `window.messages` messages and
 * `window.bytes` of their JSON text are held (parsed objects take a few times their text).
 */
export async function* reorder(source: AsyncIterable<Timed>, window: { messages: number; bytes: number }): AsyncGenerator<Timed> {
  const heap = new Heap();
  let held = 0;
  for await (const x of source) {
    heap.push(x);
    held += x.m.bytes ?? 0;
    while (heap.size > window.messages || (held > window.bytes && heap.size > 1)) {
      const y = heap.pop()!;
      held -= y.m.bytes ?? 0;
      yield y;
    }
  }
  while (heap.size > 0) yield heap.pop()!;
}

/** Merges streams that are each in receive order into one in receive order. */
export async function* merge(sources: AsyncIterator<Timed>[]): AsyncGenerator<Timed> {
  const heads = await Promise.all(sources.map((s) => s.next()));
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (!h.done && (best < 0 || before(h.value, (heads[best] as IteratorYieldResult<Timed>).value))) best = i;
    }
    if (best < 0) return;
    yield (heads[best] as IteratorYieldResult<Timed>).value;
    heads[best] = await sources[best].next();
  }
}
