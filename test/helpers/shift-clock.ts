// Preloaded (`NODE_OPTIONS=--import …/shift-clock.js`) into the `sim` and `record` processes of
// test/engines and test/tardis: their wall clock runs PMTAPE_TEST_CLOCK_SHIFT_MS behind, so the sim day they make
// lies on a closed UTC day, which compacts and exports like any past day. Only the clock moves:
// the emulators, the recorder, the logs and the compaction are the real ones.

const shift = Number(process.env.PMTAPE_TEST_CLOCK_SHIFT_MS ?? '0');
if (!Number.isSafeInteger(shift))
  throw new Error(`PMTAPE_TEST_CLOCK_SHIFT_MS must be an integer of ms, got ${process.env.PMTAPE_TEST_CLOCK_SHIFT_MS}`);

const RealDate = Date;
class ShiftedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() - shift);
    else super(...(args as [string | number | Date]));
  }
  static override now(): number {
    return RealDate.now() - shift;
  }
}
globalThis.Date = ShiftedDate as DateConstructor;
