// One side of a Tardis book: price → size in insertion order, as a JavaScript Map keeps them, in
// buffers that are reused. A Map's table is allocated anew on `clear()` and regrown entry by entry,
// and a busy day's full books (thousands, 50-100 levels each) made that most of what the writer's
// thread allocated. The order matters: a full book after another is written as their difference,
// its removed levels in the order the old book holds them (book.ts).

/** Slots of the open-addressed index: a power of two, at least twice the entries. */
const EMPTY = -1;
const GONE = -2;

export class LevelMap<V> {
  private keysAt = new Float64Array(8);
  private valuesAt: V[] = [];
  private alive = new Uint8Array(8);
  /** Entries appended so far (live and deleted), and the live ones. */
  private used = 0;
  private live = 0;
  private slots = new Int32Array(32).fill(EMPTY);

  get size(): number {
    return this.live;
  }

  private slotOf(p: number): number {
    const mask = this.slots.length - 1;
    let h = (Math.imul(p | 0, 0x9e3779b1) ^ Math.imul((p / 4294967296) | 0, 0x85ebca6b)) >>> 7;
    for (;;) {
      h &= mask;
      const e = this.slots[h];
      if (e === EMPTY || (e >= 0 && this.keysAt[e] === p)) return h;
      h++;
    }
  }

  has(p: number): boolean {
    return this.slots[this.slotOf(p)] >= 0;
  }

  get(p: number): V | undefined {
    const e = this.slots[this.slotOf(p)];
    return e >= 0 ? this.valuesAt[e] : undefined;
  }

  set(p: number, v: V): void {
    const h = this.slotOf(p);
    const e = this.slots[h];
    if (e >= 0) {
      this.valuesAt[e] = v;
      return;
    }
    if (this.used === this.keysAt.length || (this.used + 1) * 2 > this.slots.length) {
      this.rebuild();
      return this.set(p, v);
    }
    const n = this.used++;
    this.keysAt[n] = p;
    this.valuesAt[n] = v;
    this.alive[n] = 1;
    this.slots[h] = n;
    this.live++;
  }

  delete(p: number): void {
    const h = this.slotOf(p);
    const e = this.slots[h];
    if (e < 0) return;
    this.slots[h] = GONE;
    this.alive[e] = 0;
    this.live--;
  }

  clear(): void {
    this.used = 0;
    this.live = 0;
    this.slots.fill(EMPTY);
  }

  forEach(f: (v: V, p: number) => void): void {
    const n = this.used;
    for (let e = 0; e < n; e++) if (this.alive[e] === 1) f(this.valuesAt[e], this.keysAt[e]);
  }

  /** The prices, in insertion order. */
  keys(): number[] {
    const out: number[] = [];
    this.forEach((_, p) => out.push(p));
    return out;
  }

  /** The live entries moved to the front, in order; the buffers grown when the live ones fill half. */
  private rebuild(): void {
    let n = 0;
    for (let e = 0; e < this.used; e++) {
      if (this.alive[e] !== 1) continue;
      this.keysAt[n] = this.keysAt[e];
      this.valuesAt[n] = this.valuesAt[e];
      this.alive[n] = 1;
      n++;
    }
    this.valuesAt.length = n;
    if (n * 2 >= this.keysAt.length) {
      const keys = new Float64Array(this.keysAt.length * 2);
      keys.set(this.keysAt.subarray(0, n));
      this.keysAt = keys;
      const alive = new Uint8Array(keys.length);
      alive.fill(1, 0, n);
      this.alive = alive;
      this.slots = new Int32Array(keys.length * 4);
    }
    this.used = n;
    this.slots.fill(EMPTY);
    for (let e = 0; e < n; e++) this.slots[this.slotOf(this.keysAt[e])] = e;
  }
}
