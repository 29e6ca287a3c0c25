// The in-place encoder: the JSON part it writes by hand is byte for byte what JSON.stringify gives
// (so the on-disk format is unchanged), and running out of room anywhere in the writer's arena
// re-encodes the same frame in a fresh buffer.

import t from 'tap';
import fc from 'fast-check';
import type { Observation } from '../../src/schema/observation.js';
import { encodeFrame, encodeFrameAt, FLAG_LADDERS, FRAME_OVERHEAD, parseFrame, type Arena } from '../../src/storage/log/frame.js';

const HEADER = new Set(['type', 'recv_ts', 'source_ts', 'seq']);
const LADDER_KEYS: Record<string, string[]> = { book: ['bids', 'asks'], yesno_book: ['yes', 'no'], book_checkpoint: ['books'] };

/** What the payload's JSON text must be: JSON.stringify of the record minus header (and ladder) keys. */
function expectedJson(obs: Record<string, unknown>, binary: boolean): string {
  const skip = new Set([...HEADER, ...(binary ? (LADDER_KEYS[obs.type as string] ?? []) : [])]);
  const rest: Record<string, unknown> = {};
  for (const k of Object.keys(obs)) if (!skip.has(k)) Object.defineProperty(rest, k, { value: obs[k], enumerable: true, writable: true });
  return JSON.stringify(rest);
}

function payloadJson(frame: Buffer): { json: string; binary: boolean } {
  const r = parseFrame(frame, 0, 0);
  if (r.status !== 'ok') throw new Error(r.status);
  const binary = (r.head.flags & FLAG_LADDERS) !== 0;
  if (!binary) return { json: frame.toString('utf8', FRAME_OVERHEAD), binary };
  const len = frame.readUInt32LE(FRAME_OVERHEAD);
  return { json: frame.toString('utf8', FRAME_OVERHEAD + 4, FRAME_OVERHEAD + 4 + len), binary };
}

const text = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('a"b', 'back\\slash', 'tab\there', '\u0000\u001f\u007f', '\ud800', 'é€😀'),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  text,
  fc.double(),
  fc.constantFrom(-0, Number.NaN, Infinity, -Infinity, 1e21, 1e-7, 2 ** 53, true, false, null, undefined),
  fc.jsonValue({ maxDepth: 2 }),
  fc.constant(new Date(1_780_000_000_000)),
  fc.constant(() => 1),
  // Arrays are written in place (a delta's `changes`): odd elements and flat objects with odd values.
  fc.array(
    fc.oneof(
      text,
      fc.double(),
      fc.constantFrom(undefined, null, -0, Number.NaN, true, () => 1, Symbol('s')),
      fc.constant(new Date(1_780_000_000_000)),
      fc.array(text, { maxLength: 2 }),
      fc.dictionary(
        fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('a"k', '1')),
        fc.oneof(
          text,
          fc.double(),
          fc.constantFrom(undefined, null, Infinity, () => 1),
          fc.array(fc.oneof(text, fc.constant(undefined)), { maxLength: 2 }),
        ),
        { maxKeys: 4 },
      ),
    ),
    { maxLength: 5 },
  ),
);
const extra = fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('1', '20', 'a"k', 'ü', 'seq', 'type')), value, {
  maxKeys: 6,
});
const price = fc.oneof({ arbitrary: fc.stringMatching(/^[0-9.]{1,8}$/), weight: 8 }, { arbitrary: text, weight: 1 });
const ladder = fc.array(fc.tuple(price, price), { maxLength: 8 });

const record: fc.Arbitrary<Observation> = fc
  .tuple(
    fc.constantFrom('trade', 'metric', 'book', 'yesno_book', 'book_checkpoint', 'catalog'),
    fc.integer({ min: 0, max: 9e12 }),
    extra,
    ladder,
    ladder,
  )
  .map(([type, recv, more, a, b]) => {
    const o: Record<string, unknown> = { type, recv_ts: recv, source_ts: null };
    for (const [k, v] of Object.entries(more))
      if (!HEADER.has(k)) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true });
    if (type === 'book') Object.assign(o, { bids: a, asks: b });
    if (type === 'yesno_book') Object.assign(o, { yes: a, no: b });
    if (type === 'book_checkpoint') o.books = [{ token_id: 'tok', bids: a, asks: b }];
    return o as unknown as Observation;
  });

t.test("the payload's JSON text is exactly JSON.stringify of the record's other fields", async (t) => {
  let binary = 0;
  let plain = 0;
  fc.assert(
    fc.property(record, (obs) => {
      const frame = encodeFrame(obs, 1, false);
      const got = payloadJson(frame);
      if (got.binary) binary++;
      else plain++;
      return got.json === expectedJson(obs as unknown as Record<string, unknown>, got.binary);
    }),
    { numRuns: 3000 },
  );
  t.ok(binary > 100 && plain > 100, `both layouts were exercised (${binary} binary, ${plain} JSON)`);
});

t.test('a frame that runs out of arena room at any byte is re-encoded identically in a new buffer', async (t) => {
  fc.assert(
    fc.property(record, fc.nat(), fc.integer({ min: 1, max: 1e9 }), (obs, room, seq) => {
      const want = encodeFrame(obs, seq, true);
      let grown = 0;
      const arena: Arena = {
        buf: Buffer.alloc(7 + (room % (want.length + 8))),
        used: 7,
        ensure(size) {
          grown++;
          if (this.buf.length - this.used >= size) return;
          this.buf = Buffer.alloc(size + 3);
          this.used = 3;
        },
      };
      const size = encodeFrameAt(arena, obs, seq, true);
      const ok = arena.buf.subarray(arena.used, arena.used + size).equals(want) && grown <= 1;
      return ok;
    }),
    { numRuns: 2000 },
  );
  t.pass('every cut point gives the same frame, growing the arena at most once');
});

t.test('ladders keep the binary layout only for short ASCII text, and the rest stays JSON', async (t) => {
  const base = { type: 'book', recv_ts: 1, source_ts: null, token_id: 'tok', units: 'decimal', hash: 'q"uote' } as const;
  const ascii = payloadJson(encodeFrame({ ...base, bids: [['0.5', '10']], asks: [] }, 1, false));
  t.equal(ascii.binary, true);
  t.equal(ascii.json, '{"token_id":"tok","units":"decimal","hash":"q\\"uote"}');
  const wide = payloadJson(encodeFrame({ ...base, bids: [['0.5', '1€']], asks: [] }, 1, false));
  t.equal(wide.binary, false, 'a non-ASCII size falls back to JSON');
  t.equal(wide.json, JSON.stringify({ token_id: 'tok', units: 'decimal', hash: 'q"uote', bids: [['0.5', '1€']], asks: [] }));
  const long = payloadJson(encodeFrame({ ...base, bids: [['0.5', 'x'.repeat(256)]], asks: [] }, 1, false));
  t.equal(long.binary, false, 'a 256-char value does not fit the 1-byte length');
});
