// A Tardis book side (src/storage/tardis/levels.ts) behaves as the Map it replaced: the same
// entries, sizes and insertion order (a full book's removed levels are written in that order) under
// a long pseudo-random run of sets, updates, deletes, re-adds and clears, with prices above 2^32
// and colliding low bits, through the buffers' regrowth and compaction.

import t from 'tap';
import { LevelMap } from '../../src/storage/tardis/levels.js';

const entries = <V>(m: { forEach(f: (v: V, p: number) => void): void }): [number, V][] => {
  const out: [number, V][] = [];
  m.forEach((v, p) => out.push([p, v]));
  return out;
};

t.test('the same entries in the same order as a Map', async (t) => {
  const mine = new LevelMap<number | string>();
  const map = new Map<number, number | string>();
  let s = 99;
  const next = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
  let bad = 0;
  for (let k = 0; k < 200_000; k++) {
    const r = next() % 100;
    // Prices of a few ladders: small, at a 0.001 tick at scale 8, and beyond 2^32.
    const p = [next() % 64, 30_400_000 + (next() % 300) * 100_000, 2 ** 33 + (next() % 40) * 2 ** 20][next() % 3];
    if (r < 55) {
      const v = next() % 5 === 0 ? `t${next() % 9}` : -(next() % 1000) - 1;
      mine.set(p, v);
      map.set(p, v);
    } else if (r < 97) {
      mine.delete(p);
      map.delete(p);
    } else if (r < 98) {
      mine.clear();
      map.clear();
    }
    if (mine.size !== map.size || mine.has(p) !== map.has(p) || mine.get(p) !== map.get(p)) bad++;
    if (k % 997 === 0 && JSON.stringify(entries(mine)) !== JSON.stringify(entries(map))) bad++;
  }
  t.equal(bad, 0, 'no step differed');
  t.same(entries(mine), entries(map), 'the final entries, in order');
  t.same(mine.keys(), [...map.keys()], 'keys in order');
});
