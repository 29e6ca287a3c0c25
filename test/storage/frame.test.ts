// Frames and payloads: every observation shape round-trips exactly through encode/decode (binary
// ladders when they are plain ASCII, JSON otherwise), and any damage to a frame is detected.

import t from 'tap';
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import type { Observation } from '../../src/schema/observation.js';
import { decodeRecord, encodeFrame, FLAG_LADDERS, parseFrame } from '../../src/storage/log/frame.js';

const text = fc.oneof(fc.stringMatching(/^[0-9.]{1,8}$/), fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 300 }));
const ladder = fc.array(fc.tuple(text, text), { maxLength: 30 });
const base = { recv_ts: fc.integer({ min: 0, max: 9e12 }), source_ts: fc.oneof(fc.constant(null), fc.integer({ min: -1e12, max: 9e12 })) };

const observation: fc.Arbitrary<Observation> = fc.oneof(
  fc.record(
    {
      type: fc.constant('book' as const),
      ...base,
      token_id: fc.string(),
      units: fc.constant('decimal' as const),
      bids: ladder,
      asks: ladder,
      hash: fc.string(),
    },
    { requiredKeys: ['type', 'recv_ts', 'source_ts', 'token_id', 'units', 'bids', 'asks'] },
  ),
  fc.record({
    type: fc.constant('yesno_book' as const),
    ...base,
    units: fc.constantFrom('dollars' as const, 'cents' as const),
    yes: ladder,
    no: ladder,
    poll_interval_ms: fc.integer(),
  }),
  fc.record({
    type: fc.constant('book_checkpoint' as const),
    ...base,
    units: fc.constant('decimal' as const),
    books: fc.array(fc.record({ token_id: fc.string({ unit: 'binary', maxLength: 80 }), bids: ladder, asks: ladder }), { maxLength: 4 }),
  }),
  fc.record({
    type: fc.constant('book_delta' as const),
    ...base,
    token_id: fc.string(),
    changes: fc.array(fc.record({ side: fc.constantFrom('bid' as const, 'ask' as const), price: text, size: text })),
  }),
  fc.record({
    type: fc.constant('metric' as const),
    ...base,
    metric: fc.constantFrom('chance' as const, 'price' as const),
    outcome: fc.string(),
    value: fc.double({ noNaN: true, noDefaultInfinity: true }),
  }),
  fc.record({
    type: fc.constant('gap' as const),
    ...base,
    reason: fc.constant('disconnected' as const),
    start_ts: fc.integer(),
    end_ts: fc.oneof(fc.constant(null), fc.integer()),
  }),
);

t.test('every observation shape round-trips exactly through a frame', async (t) => {
  let binary = 0;
  fc.assert(
    fc.property(observation, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.boolean(), (obs, seq, cp) => {
      const frame = encodeFrame(obs, seq, cp);
      const r = parseFrame(frame, 0, 0);
      if (r.status !== 'ok') return false;
      if (r.head.flags & FLAG_LADDERS) binary++;
      const back = decodeRecord(frame, 0, r.head);
      // JSON turns -0 into 0; everything else must come back identical.
      const want = JSON.parse(JSON.stringify({ ...obs, seq }));
      return isDeepStrictEqual(JSON.parse(JSON.stringify(back)), want) && r.head.seq === seq && r.head.size === frame.length;
    }),
    { numRuns: 3000 },
  );
  t.ok(binary > 50, `the binary ladder layout was exercised (${binary} frames)`);
});

t.test('a ladder that is not short ASCII text falls back to JSON and still round-trips', async (t) => {
  const obs: Observation = {
    type: 'book',
    recv_ts: 1,
    source_ts: null,
    token_id: 't',
    units: 'decimal',
    bids: [['0.5', 'ünïcode']],
    asks: [['x'.repeat(300), '1']],
  };
  const frame = encodeFrame(obs, 7, false);
  const r = parseFrame(frame, 0, 0);
  t.equal(r.status, 'ok');
  if (r.status !== 'ok') return;
  t.equal(r.head.flags & FLAG_LADDERS, 0);
  t.same(decodeRecord(frame, 0, r.head), { ...obs, seq: 7 });
});

t.test('any single-bit flip or truncation of a frame is detected', async (t) => {
  const frame = encodeFrame({ type: 'trade', recv_ts: 1e12, source_ts: 1e12 - 5, token_id: 'tok', price: '0.5', size: '10' }, 42, false);
  for (let bit = 0; bit < frame.length * 8; bit++) {
    const bad = Buffer.from(frame);
    bad[bit >> 3] ^= 1 << (bit & 7);
    const r = parseFrame(bad, 0, 0);
    if (r.status === 'ok') t.fail(`flip of bit ${bit} went unnoticed`);
  }
  for (let len = 0; len < frame.length; len++) {
    if (parseFrame(frame.subarray(0, len), 0, 0).status !== 'short') t.fail(`cut at ${len} not short`);
  }
  t.pass(`${frame.length * 8} flips and ${frame.length} cuts checked`);
});
