// The `--faults` spec parser and the seeded dice every emulated kind rolls.

import t from 'tap';
import { FaultDice, FaultSpecError, NO_FAULTS, parseFaults, rng } from '../../src/sim/faults.js';

t.test('the API.md example spec parses into rates and a drop period', async (t) => {
  const f = parseFaults('drop=4s,garbage=0.02,gap=0.01,stall=0.01,http429=0.05,http5xx=0.02');
  t.match(f, { dropEveryMs: 4000, drop: 0, garbage: 0.02, gap: 0.01, stall: 0.01, http429: 0.05, http5xx: 0.02, dup: 0 });
});

t.test('extra faults and their durations parse; an empty spec means no faults', async (t) => {
  t.match(parseFaults('slow=0.1,slow_ms=2s,dup=0.5,unknown=1,stall_ms=250ms,retry_after_s=3,drop=0.001'), {
    slow: 0.1,
    slowMs: 2000,
    dup: 0.5,
    unknown: 1,
    stallMs: 250,
    retryAfterS: 3,
    drop: 0.001,
  });
  t.same(parseFaults(''), NO_FAULTS);
  t.same(parseFaults(undefined), NO_FAULTS);
});

t.test('bad specs are refused with a message naming the fault', async (t) => {
  t.throws(() => parseFaults('garbage=2'), FaultSpecError);
  t.throws(() => parseFaults('garbage=2'), /garbage=2 must be a probability/);
  t.throws(() => parseFaults('teleport=0.1'), /unknown fault "teleport"/);
  t.throws(() => parseFaults('drop'), /not name=value/);
  t.throws(() => parseFaults('drop=4parsecs'), /drop=4parsecs/);
  t.throws(() => parseFaults('gap=-0.1'), /gap=-0.1/);
});

t.test('the dice are deterministic for a seed and hit their rate', async (t) => {
  const a = new FaultDice(parseFaults('gap=0.1'), rng(42));
  const b = new FaultDice(parseFaults('gap=0.1'), rng(42));
  const ra = Array.from({ length: 5000 }, () => a.roll('gap'));
  const rb = Array.from({ length: 5000 }, () => b.roll('gap'));
  t.same(ra, rb);
  const hits = ra.filter(Boolean).length;
  t.ok(hits > 350 && hits < 650, `about 10%: ${hits}`);
  t.notOk(new FaultDice(NO_FAULTS, rng(1)).roll('garbage'), 'a zero rate never fires');
});

t.test('garbled frames are never valid JSON', async (t) => {
  const d = new FaultDice(NO_FAULTS, rng(5));
  const text = JSON.stringify({
    event_type: 'price_change',
    market: '0xabc',
    price_changes: [{ asset_id: '1', price: '0.5', size: '1', side: 'BUY' }],
  });
  for (let i = 0; i < 200; i++) t.throws(() => JSON.parse(d.garble(text)));
});

t.test('http faults come out as 429 with Retry-After, 5xx or a delay', async (t) => {
  const d = new FaultDice(parseFaults('http429=1,retry_after_s=2'), rng(1));
  t.same(d.http(), { status: 429, retryAfterS: 2 });
  t.match(new FaultDice(parseFaults('http5xx=1'), rng(1)).http(), { status: /^50[023]$/ });
  t.same(new FaultDice(parseFaults('slow=1,slow_ms=10'), rng(1)).http(), { delayMs: 10 });
  t.equal(new FaultDice(NO_FAULTS, rng(1)).http(), null);
});
