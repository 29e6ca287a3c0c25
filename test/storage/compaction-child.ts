// Child process of the compaction crash test: compacts one day of a data dir, printing each
// publication step; with a step name as third argument it stops there (and waits to be killed).

import { compactDay } from '../../src/storage/compaction/compact-day.js';

const [dataDir, day, holdAt] = process.argv.slice(2);
await compactDay(dataDir, day, {
  onStep: (step) => {
    process.stdout.write(`step ${step}\n`);
    if (step === holdAt) {
      setInterval(() => undefined, 1000);
      // Never resolves: the parent SIGKILLs us here, between two publication steps.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    }
  },
});
process.stdout.write('done\n');
