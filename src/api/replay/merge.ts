// A k-way merge of sorted async sources into one sorted stream, for `/v3/replay`. Sources hand out
// their items in batches and the merge hands out batches, so a line costs no await of its own: a
// binary heap holds the head of each source's current batch, and a source is only pulled again
// when its batch has been used up (the consumer paces every source; memory is one batch per source
// and one output batch). Ties between sources are broken by source index, so the output is
// deterministic whatever the batch boundaries.

/** Min-heap of source numbers ordered by their current head (`heads[src]`) by `cmp`, then by number. */
class HeadHeap<T> {
  private readonly a: number[] = [];
  constructor(
    private readonly heads: readonly T[],
    private readonly cmp: (x: T, y: T) => number,
  ) {}

  private less(i: number, j: number): boolean {
    const x = this.a[i];
    const y = this.a[j];
    const c = this.cmp(this.heads[x], this.heads[y]);
    return c < 0 || (c === 0 && x < y);
  }

  private swap(i: number, j: number): void {
    const t = this.a[i];
    this.a[i] = this.a[j];
    this.a[j] = t;
  }

  push(src: number): void {
    this.a.push(src);
    let i = this.a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  /** The source with the least head, or -1 when the heap is empty. */
  peek(): number {
    return this.a.length === 0 ? -1 : this.a[0];
  }

  /** After the top source's head changed: moves it down to its place. */
  siftTop(): void {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.a.length && this.less(l, m)) m = l;
      if (r < this.a.length && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  /** Removes the top source. */
  pop(): void {
    const last = this.a.pop()!;
    if (this.a.length > 0) {
      this.a[0] = last;
      this.siftTop();
    }
  }
}

/**
 * Merges sources whose items (taken batch after batch) are each sorted by `cmp` into one sorted
 * stream, handing each item to `sink` as soon as it is the least head: an item is never held by
 * the merge (a batch of output lines kept for one await lives long enough to be promoted out of
 * the young generation, which made every collection costly). `sink` returns false (or a promise of
 * false) to stop; a promise pauses the merge until it settles (backpressure). Resolves true when
 * every source ended, false when the sink stopped it. Stopping early (the sink, or an error from a
 * source or the sink) closes every source that is still open.
 */
export async function mergeSorted<T>(
  sources: readonly AsyncIterable<readonly T[]>[],
  cmp: (a: T, b: T) => number,
  sink: (item: T) => boolean | Promise<boolean>,
): Promise<boolean> {
  const its = sources.map((s) => s[Symbol.asyncIterator]());
  const open = new Set<number>(its.map((_, i) => i));
  const batches: (readonly T[])[] = its.map(() => []);
  const at: number[] = its.map(() => 0);
  const heads: T[] = new Array<T>(its.length);
  const heap = new HeadHeap<T>(heads, cmp);
  /** Pulls source i's next non-empty batch; false when the source is done. */
  const refill = async (i: number): Promise<boolean> => {
    for (;;) {
      const r = await its[i].next();
      if (r.done) {
        open.delete(i);
        batches[i] = [];
        return false;
      }
      if (r.value.length === 0) continue;
      batches[i] = r.value;
      heads[i] = r.value[0];
      at[i] = 1;
      return true;
    }
  };
  try {
    // Heads are pulled one source at a time: sources share one disk, and order must not depend on timing.
    for (let i = 0; i < its.length; i++) if (await refill(i)) heap.push(i);
    for (let i = heap.peek(); i >= 0; i = heap.peek()) {
      const item = heads[i];
      const usedUp = at[i] === batches[i].length;
      if (usedUp) heap.pop();
      else {
        heads[i] = batches[i][at[i]++];
        heap.siftTop();
      }
      const more = sink(item);
      if (more === false || (more !== true && !(await more))) return false;
      // Pulled after the sink took the item: a source's failure comes after every item before it.
      if (usedUp && (await refill(i))) heap.push(i);
    }
    return true;
  } finally {
    for (const i of open) await its[i].return?.();
  }
}
