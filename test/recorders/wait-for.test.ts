// The recorder tests' waitFor: a predicate that throws must reject the wait, on the first try and on
// a later one (it once became an unhandled rejection from a timer and left the wait pending forever).

import t from 'tap';
import { waitFor } from './helpers.js';

t.test('a predicate that throws at once rejects the wait', async (t) => {
  await t.rejects(
    waitFor(() => {
      throw new Error('broken predicate');
    }, 60_000),
    /broken predicate/,
  );
});

t.test('a predicate that throws on a later try rejects the wait', async (t) => {
  let calls = 0;
  const pred = async (): Promise<boolean> => {
    await Promise.resolve();
    if (++calls < 3) return false;
    throw new Error(`failed on try ${calls}`);
  };
  await t.rejects(waitFor(pred, 60_000, 1), /failed on try 3/);
});

t.test('a predicate that comes true resolves true; one that never does resolves false', async (t) => {
  let calls = 0;
  t.equal(await waitFor(() => ++calls >= 2, 60_000, 1), true);
  t.equal(await waitFor(() => false, 20, 1), false);
});
