// Row groups decoded on another thread for the Tardis files: the Parquet decode (parquet-wasm) was
// about a quarter of the writer's thread, so a helper thread decodes the next row groups while this
// one writes the rows of the current one and zlib compresses in the thread pool; the three overlap.
// One helper for the process, started on first use and not keeping the process alive. A decode
// that fails rejects with the file, row group and the decoder's message; a helper that dies rejects
// every decode waiting on it and the next decode starts a new one.

import { Worker } from 'node:worker_threads';
import { tableFromIPC, type Table } from 'apache-arrow';
import type { DecodeAnswer, DecodeJob } from './decode-worker.js';
import type { FileSegment, OpenFile } from '../parquet/partition-files.js';
import { remoteFile } from '../parquet/remote-files.js';

/**
 * Where row groups are decoded: `worker` on the helper thread (files read from a mounted bucket are
 * decoded here, as the bucket is known to this thread only), `inline` on this one. Both give the
 * same rows; a damaged row group makes parquet-wasm panic outside any promise, which ends the
 * thread it runs on: on the helper, only the helper.
 */
export type TardisDecode = 'worker' | 'inline';

/** One market's segment of a part file, decoded where `decode` says. */
export function readSegment(f: OpenFile, s: FileSegment, names: readonly string[], decode: TardisDecode): Promise<Table> {
  return decode === 'worker' && remoteFile(f.path) === null
    ? decodeElsewhere(f.id, f.path, s.rg, s.start, s.rows, names)
    : f.reader.readRows(s.rg, s.start, s.rows, [...names]);
}

interface Waiting {
  readonly resolve: (t: Uint8Array) => void;
  readonly reject: (e: Error) => void;
  readonly what: string;
}

let worker: Worker | null = null;
let jobs = 0;
const waiting = new Map<number, Waiting>();

function failAll(w: Worker, why: string): void {
  if (worker === w) worker = null;
  for (const [job, x] of waiting) {
    waiting.delete(job);
    x.reject(new Error(`tardis: decoding ${x.what} failed: the decoding thread ${why}; the part file may be damaged`));
  }
}

function helper(): Worker {
  if (worker) return worker;
  const w = new Worker(new URL('./decode-worker.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: 64 } });
  w.unref(); // idle, it does not keep a command's process alive
  w.on('message', (a: DecodeAnswer) => {
    const x = waiting.get(a.job);
    if (!x) return;
    waiting.delete(a.job);
    if (waiting.size === 0) w.unref();
    if ('ipc' in a) x.resolve(a.ipc);
    else x.reject(new Error(`tardis: decoding ${x.what} failed: ${a.error}`));
  });
  w.on('error', (e) => failAll(w, `stopped (${e.message})`));
  w.on('exit', (code) => failAll(w, `exited (code ${code})`));
  worker = w;
  return w;
}

/** Rows [offset, offset + limit) of row group `rg` of the part file at `path` (`id`: path and sha256), decoded on the helper thread. */
export function decodeElsewhere(
  id: string,
  path: string,
  rg: number,
  offset: number,
  limit: number,
  columns: readonly string[],
): Promise<Table> {
  const w = helper();
  const job = ++jobs;
  return new Promise<Uint8Array>((resolve, reject) => {
    waiting.set(job, { resolve, reject, what: `${path} row group ${rg}` });
    w.ref(); // while a decode is waiting, the process waits for it
    w.postMessage({ job, id, path, rg, offset, limit, columns } satisfies DecodeJob);
  }).then((ipc) => tableFromIPC(ipc));
}
