// A k-way merge of sorted async sources into one sorted stream, for `/v3/replay`: a binary heap
// holds the head item of each source, so memory is one item per source whatever the range, and a
// source is only pulled again when its head has been taken (the consumer paces every source).
// Ties between sources are broken by source index, so the output is deterministic.

interface Head<T> {
  readonly item: T;
  readonly src: number;
}

/** Min-heap of source heads ordered by `cmp`, then by source index. */
class HeadHeap<T> {
  private readonly a: Head<T>[] = [];
  constructor(private readonly cmp: (x: T, y: T) => number) {}

  get size(): number {
    return this.a.length;
  }

  private less(i: number, j: number): boolean {
    const c = this.cmp(this.a[i].item, this.a[j].item);
    return c < 0 || (c === 0 && this.a[i].src < this.a[j].src);
  }

  private swap(i: number, j: number): void {
    const t = this.a[i];
    this.a[i] = this.a[j];
    this.a[j] = t;
  }

  push(h: Head<T>): void {
    this.a.push(h);
    let i = this.a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  pop(): Head<T> | undefined {
    const n = this.a.length;
    if (n === 0) return undefined;
    const top = this.a[0];
    const last = this.a.pop()!;
    if (n > 1) {
      this.a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.a.length && this.less(l, m)) m = l;
        if (r < this.a.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}

/**
 * Merges sources that are each sorted by `cmp` into one sorted stream. Stopping the merge early
 * (break, return, or an error from any source) closes every source that is still open.
 */
export async function* mergeSorted<T>(sources: readonly AsyncIterable<T>[], cmp: (a: T, b: T) => number): AsyncGenerator<T> {
  const its = sources.map((s) => s[Symbol.asyncIterator]());
  const open = new Set<number>(its.map((_, i) => i));
  const heap = new HeadHeap<T>(cmp);
  try {
    // Heads are pulled one source at a time: sources share one disk, and order must not depend on timing.
    for (let i = 0; i < its.length; i++) {
      const r = await its[i].next();
      if (r.done) open.delete(i);
      else heap.push({ item: r.value, src: i });
    }
    for (;;) {
      const h = heap.pop();
      if (!h) return;
      yield h.item;
      const r = await its[h.src].next();
      if (r.done) open.delete(h.src);
      else heap.push({ item: r.value, src: h.src });
    }
  } finally {
    for (const i of open) await its[i].return?.();
  }
}
