// One hole, one closed row: the gaps a recorder finds after the fact (a rebuilt book that drifted
// from the venue's next snapshot) go through a real LogSink into a real log. A span of no time is
// not written, nor one the market's previous such row already covers (the other token drifted in
// the same hole); before, a faulty sim run wrote a zero-length row and then the same gap again with
// a later end (`start 749 end 749`, then `start 749 end 750`), so counting closed gaps over-counted.

import t from 'tap';
import { Recorder } from '../../src/recorders/recorder.js';
import { LogSink } from '../../src/recorders/sink.js';
import { silentLogger } from '../../src/recorders/logger.js';
import type { Family, GapReason } from '../../src/schema/observation.js';
import type { LogKey } from '../../src/storage/index.js';
import { loadConfig } from '../../src/config.js';
import { readLog, tempDir } from './helpers.js';

class Probe extends Recorder {
  readonly kind = 'clob';
  readonly family: Family = 'coin';
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  isConnected(): boolean {
    return true;
  }
  connectedMarkets(): string[] {
    return [];
  }
  closed(key: LogKey, reason: GapReason, start: number, end: number): void {
    this.writeClosedGap(key, reason, start, end, end, 'rebuilt book disagreed with the next snapshot');
  }
}

t.test('after-the-fact gaps: no zero-length row, no second row for a hole already written', async (t) => {
  const dir = tempDir();
  const sink = new LogSink(dir, { monotonic: true, minFreeBytes: 0 });
  t.teardown(() => sink.close());
  const rec = new Probe({ config: loadConfig({ dataDir: dir }, {}), logger: silentLogger, sink, inShard: () => true, shared: new Map() });
  const key: LogKey = { family: 'coin', stream: 'books', market: '540817' };
  const T = Date.parse('2026-07-26T12:00:00.000Z');
  rec.closed(key, 'sequence_gap', T + 749, T + 749); // token A: known right at this very millisecond
  rec.closed(key, 'sequence_gap', T + 749, T + 750); // token B, a millisecond later: the hole
  rec.closed(key, 'sequence_gap', T + 2000, T + 2392);
  rec.closed(key, 'sequence_gap', T + 2000, T + 2392); // the other token of the same frame
  rec.closed(key, 'sequence_gap', T + 2100, T + 2392); // inside the hole already written
  rec.closed(key, 'sequence_gap', T + 3000, T + 3500); // a new hole
  await sink.settle();
  const gaps = (await readLog(dir, 'coin', 'books', key.market)).filter((r) => r.type === 'gap');
  t.same(gaps.map((g) => g.type === 'gap' && [g.start_ts - T, g.end_ts! - T]), [[749, 750], [2000, 2392], [3000, 3500]], 'one closed row per hole');
  t.equal(rec.status().gaps, 3, 'and the status counts three gaps');
});
