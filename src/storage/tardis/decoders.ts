// Row groups decoded on other threads for the Tardis files: the Parquet decode (parquet-wasm) was
// about a quarter of the writer's thread, so helper threads decode the next row groups while this
// one writes the rows of the current one and zlib compresses in the thread pool; the three overlap.
// One helper for the process (HELPERS), started on first use and not keeping the process
// alive. Their answers arrive in a few shared slots lent per job and given back once the rows are
// read (Segment.release): memory allocated once, where a new buffer of a few MB per row group made
// this thread run a full collection every few groups (docs/benchmarks.md). A decode that fails
// rejects with the file, row group and the decoder's message; a helper that dies rejects every
// decode waiting on it and the next decode starts a new one.

import { Worker } from 'node:worker_threads';
import { tableFromIPC, type Table } from 'apache-arrow';
import type { DecodeAnswer, DecodeJob, SlotMessage } from './decode-worker.js';
import type { FileSegment, OpenFile } from '../parquet/partition-files.js';
import { remoteFile } from '../parquet/remote-files.js';

/**
 * Where row groups are decoded: `worker` on the helper thread (files read from a mounted bucket are
 * decoded here, as the bucket is known to this thread only), `inline` on this one. Both give the
 * same rows; a damaged row group makes parquet-wasm panic outside any promise, which ends the
 * thread it runs on: on the helper, only the helper.
 */
export type TardisDecode = 'worker' | 'inline';

/**
 * Decoded rows, and what to call once they are read: the table may live in a shared slot that the
 * next decode overwrites after `release`, so nothing of it (no view of its buffers) may be kept past it.
 */
export interface Segment {
  readonly table: Table;
  readonly release: () => void;
}

const nothingToRelease = (): void => undefined;

/** One market's segment of a part file, decoded where `decode` says. */
export function readSegment(f: OpenFile, s: FileSegment, names: readonly string[], decode: TardisDecode): Promise<Segment> {
  return decode === 'worker' && remoteFile(f.path) === null
    ? decodeElsewhere(f.id, f.path, s.rg, s.start, s.rows, names)
    : f.reader.readRows(s.rg, s.start, s.rows, [...names]).then((table) => ({ table, release: nothingToRelease }));
}

/** Shared slots of a helper lent at once (a download reads two segments ahead of the one it writes; downloads share them). */
const SLOTS = 6;
/** An answer bigger than this is handed over, not kept in a slot for good. */
const MAX_SLOT_BYTES = 32 * 1024 * 1024;

interface Waiting {
  readonly resolve: (s: Segment) => void;
  readonly reject: (e: Error) => void;
  readonly what: string;
  readonly slot: number | undefined;
}

/**
 * Helper threads decoding at once. One: the writer's thread is the slowest of the three stages
 * (decode, rows, zlib), and a second decoder measured no faster on two cores while the server's
 * memory grew by another 20–30 MB (docs/benchmarks.md); the pool is here for a machine where that differs.
 */
const HELPERS = 1;

/** One helper thread, its slots and the decodes waiting on it. */
class DecodeHelper {
  private readonly w: Worker;
  private readonly bufs: (SharedArrayBuffer | null)[] = new Array<SharedArrayBuffer | null>(SLOTS).fill(null);
  private readonly free: number[] = Array.from({ length: SLOTS }, (_, i) => i);
  private readonly waiting = new Map<number, Waiting>();
  dead = false;

  constructor() {
    this.w = new Worker(new URL('./decode-worker.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: 64 } });
    this.w.unref(); // idle, it does not keep a command's process alive
    this.w.on('message', (a: DecodeAnswer) => this.answer(a));
    this.w.on('error', (e) => this.failAll(`stopped (${e.message})`));
    this.w.on('exit', (code) => this.failAll(`exited (code ${code})`));
  }

  get load(): number {
    return this.waiting.size;
  }

  decode(job: Omit<DecodeJob, 'slot'>, what: string): Promise<Segment> {
    const slot = this.free.pop();
    return new Promise<Segment>((resolve, reject) => {
      this.waiting.set(job.job, { resolve, reject, what, slot });
      this.w.ref(); // while a decode is waiting, the process waits for it
      this.w.postMessage({ ...job, ...(slot === undefined ? {} : { slot }) } satisfies DecodeJob);
    });
  }

  private answer(a: DecodeAnswer): void {
    const x = this.waiting.get(a.job);
    if (!x) return;
    this.waiting.delete(a.job);
    if (this.waiting.size === 0) this.w.unref();
    if ('length' in a) {
      const table = tableFromIPC(new Uint8Array(this.bufs[a.slot]!, 0, a.length));
      x.resolve({ table, release: this.giveBack(a.slot) });
    } else if ('ipc' in a) x.resolve(this.handedOver(x, a.ipc));
    else {
      if (x.slot !== undefined) this.free.push(x.slot);
      x.reject(new Error(`tardis: decoding ${x.what} failed: ${a.error}`));
    }
  }

  /** Gives a slot back once, whatever calls it twice. */
  private giveBack(slot: number): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.free.push(slot);
    };
  }

  /** An answer handed over (no slot, or one too small): the slot, if any, grown for the next answer of this size. */
  private handedOver(x: Waiting, ipc: Uint8Array): Segment {
    if (x.slot !== undefined) {
      if (ipc.byteLength <= MAX_SLOT_BYTES) {
        const sab = new SharedArrayBuffer(Math.min(MAX_SLOT_BYTES, Math.ceil(ipc.byteLength * 1.25)));
        this.bufs[x.slot] = sab;
        this.w.postMessage({ slot: x.slot, sab } satisfies SlotMessage);
      }
      this.free.push(x.slot);
    }
    return { table: tableFromIPC(ipc), release: nothingToRelease };
  }

  private failAll(why: string): void {
    this.dead = true;
    for (const [job, x] of this.waiting) {
      this.waiting.delete(job);
      x.reject(new Error(`tardis: decoding ${x.what} failed: the decoding thread ${why}; the part file may be damaged`));
    }
  }
}

const helpers: (DecodeHelper | null)[] = new Array<DecodeHelper | null>(HELPERS).fill(null);
let jobs = 0;

/** The helper with the fewest decodes waiting (a dead one replaced, one started on first use). */
function helper(): DecodeHelper {
  let best = -1;
  for (let i = 0; i < helpers.length; i++) {
    const h = helpers[i];
    if (!h || h.dead) {
      helpers[i] = new DecodeHelper();
      return helpers[i]!;
    }
    if (best < 0 || h.load < helpers[best]!.load) best = i;
  }
  return helpers[best]!;
}

/** Rows [offset, offset + limit) of row group `rg` of the part file at `path` (`id`: path and sha256), decoded on the helper thread. */
export function decodeElsewhere(
  id: string,
  path: string,
  rg: number,
  offset: number,
  limit: number,
  columns: readonly string[],
): Promise<Segment> {
  return helper().decode({ job: ++jobs, id, path, rg, offset, limit, columns }, `${path} row group ${rg}`);
}
