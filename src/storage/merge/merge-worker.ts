// The helper thread of a merge's merging step (merge.ts, with `threads` ≥ 2): it takes markets
// from the counter it shares with the calling thread and merges each into its logs
// (merge-units.ts), so both cores merge while neither waits; then it posts what it merged. It is
// started before the recorders' days are fetched (loading the modules and compiling the Parquet
// decoder overlap the download) and told to begin once they are. It claims first: the calling thread
// starts once the helper holds a market (see `claimed`), so a day of a few small markets, which the
// calling thread would otherwise merge alone before the helper received its message, is shared too.

import { parentPort, Worker, workerData } from 'node:worker_threads';
import { mergeClaimed, type UnitsInput, type UnitsResult } from './merge-units.js';

type Reply =
  | { readonly type: 'claimed' }
  | { readonly type: 'done'; readonly result: UnitsResult }
  | { readonly type: 'error'; readonly message: string };

/**
 * A started helper: `run` hands it the merging step's input once and resolves with what it merged;
 * `claimed` resolves once it has claimed its first unit (rejects as `run` does when it fails);
 * `close` stops it (idempotent).
 */
export interface MergeHelper {
  run(input: UnitsInput): { claimed: Promise<void>; done: Promise<UnitsResult> };
  close(): Promise<void>;
}

export function startMergeHelper(): MergeHelper {
  const w = new Worker(new URL('./merge-worker.js', import.meta.url), { workerData: 'merge-helper' });
  let settle: { resolve: (r: UnitsResult) => void; reject: (e: Error) => void; claimed: () => void } | null = null;
  let failure: Error | null = null;
  const fail = (e: Error): void => {
    failure ??= e;
    settle?.reject(e);
    settle = null;
  };
  w.on('message', (m: Reply) => {
    if (m.type === 'claimed') return settle?.claimed();
    if (m.type === 'done') settle?.resolve(m.result);
    else settle?.reject(new Error(m.message));
    settle = null;
  });
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`the merge's helper thread stopped (exit code ${code}) before it finished`)));
  return {
    run(input) {
      let claimed!: () => void;
      const first = new Promise<void>((r) => (claimed = r));
      const done = failure
        ? Promise.reject(failure)
        : new Promise<UnitsResult>((resolve, reject) => (settle = { resolve, reject, claimed }));
      if (!failure) w.postMessage(input);
      done.catch(() => undefined); // the caller awaits it
      // Settles when the helper claims its first unit, or when it ends (done or failed) before saying so.
      return { claimed: Promise.race([first, done.then(() => undefined)]), done };
    },
    async close() {
      settle = null;
      await w.terminate();
    },
  };
}

if (parentPort && workerData === 'merge-helper') {
  const port = parentPort;
  port.once('message', (input: UnitsInput) => {
    mergeClaimed(input, () => port.postMessage({ type: 'claimed' } satisfies Reply)).then(
      (result) => port.postMessage({ type: 'done', result } satisfies Reply),
      (e: unknown) => port.postMessage({ type: 'error', message: (e as Error)?.message ?? String(e) } satisfies Reply),
    );
  });
}
