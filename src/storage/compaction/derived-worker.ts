// The helper thread of split `book_snapshots` builds (derived-split.ts). For each job it builds the
// blocks of markets it claims into part files with temporary names in the partition's staging
// folder, fsynced and verified like any part, and posts their manifest entries. It never publishes:
// the calling thread adopts the files beside its own and publishes the partition once the record
// datasets it derives from are published.

import { parentPort, workerData } from 'node:worker_threads';
import type { Family } from '../../schema/observation.js';
import type { ManifestFile } from '../parquet/manifest.js';
import { PartitionBuilder } from '../parquet/publish.js';
import { addMarket } from './derived.js';
import type { Dataset, Stream } from '../parquet/datasets.js';

export interface HelperInput {
  readonly dataDir: string;
  readonly family: Family;
  readonly stream: Stream;
  readonly dataset: Dataset;
  readonly day: string;
  /** The day's markets in order, in blocks; each block is built by whichever thread claims it first (claimBlock). */
  readonly blocks: readonly (readonly string[])[];
  /** The claim counter both threads share (one Int32 over a SharedArrayBuffer). */
  readonly next: Int32Array;
  readonly fileRows?: number;
}

export type HelperMessage =
  | { readonly type: 'step'; readonly job: number; readonly step: string }
  | {
      readonly type: 'done';
      readonly job: number;
      readonly files: readonly ManifestFile[];
      readonly markets: number;
      readonly setAside: Readonly<Record<string, number>>;
    }
  | { readonly type: 'error'; readonly job: number; readonly message: string };

/** What the calling thread posts: a job (one stream's day), and its number. */
export interface HelperJob {
  readonly job: number;
  readonly input: HelperInput;
}

/**
 * The next block of markets nobody has built yet, or null: the helper and the calling thread take
 * blocks from one counter, so whichever is free builds the next one and neither waits while work is
 * left. Each thread closes its part file at the end of a block, so no file mixes markets that are
 * not neighbours and the partition's files, in name order, stay in market order (see adopt).
 */
export function claimBlock(input: Pick<HelperInput, 'blocks' | 'next'>): readonly string[] | null {
  const i = Atomics.add(input.next, 0, 1);
  return i < input.blocks.length ? input.blocks[i] : null;
}

/** Builds every block this thread can claim into `b`, a part file per block at least. Returns the markets built. */
export async function buildClaimed(input: HelperInput, b: PartitionBuilder): Promise<number> {
  let n = 0;
  for (let block = claimBlock(input); block !== null; block = claimBlock(input)) {
    for (const market of block) await addMarket(input.dataDir, input.family, input.stream, input.day, market, b);
    await b.cut();
    n += block.length;
  }
  return n;
}

/** Temporary names of the helper's part files, distinct from the calling thread's and the final ones. */
export const helperPartName = (part: number): string => `_helper-${String(part).padStart(4, '0')}.parquet`;

async function run({ job, input }: HelperJob): Promise<void> {
  const post = (m: HelperMessage): void => parentPort!.postMessage(m);
  try {
    const b = new PartitionBuilder(
      input.dataDir,
      input.family,
      input.dataset,
      input.day,
      (step) => post({ type: 'step', job, step }),
      input.fileRows,
      helperPartName,
    );
    await b.join();
    const markets = await buildClaimed(input, b);
    post({ type: 'done', job, files: await b.cut(), markets, setAside: b.setAsideBy });
  } catch (e) {
    post({ type: 'error', job, message: (e as Error).message });
  }
}

// Jobs run one at a time, in the order posted; the thread lives as long as the compaction that made it.
if (parentPort && workerData === 'derived-helper') {
  let queue = Promise.resolve();
  parentPort.on('message', (j: HelperJob) => {
    queue = queue.then(() => run(j));
  });
}
