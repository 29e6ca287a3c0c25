// The decoding thread of the Tardis files (decoders.ts): it decodes the row groups a file's writer
// asks for into Arrow IPC bytes, while the asking thread writes the rows of the group before. The
// bytes go into a shared slot the asking thread lent for the job (one copy, no new memory: a new
// buffer of a few MB per row group on the other side set off a full collection every few groups
// there), or, without a slot big enough, are handed over without a copy. A decode that fails
// answers its error; the thread goes on.

import { parentPort } from 'node:worker_threads';
import { ParquetFileReader } from '../parquet/file.js';

/** One row range of one part file, by the path and id (path and sha256) of `OpenFile`. */
export interface DecodeJob {
  readonly job: number;
  readonly id: string;
  readonly path: string;
  readonly rg: number;
  readonly offset: number;
  readonly limit: number;
  readonly columns: readonly string[];
  /** The shared slot lent for the answer (registered before by a SlotMessage), if any. */
  readonly slot?: number;
}

/** A shared slot (re)registered under its number: answers may be written into it. */
export interface SlotMessage {
  readonly slot: number;
  readonly sab: SharedArrayBuffer;
}

export type DecodeAnswer =
  | { readonly job: number; readonly ipc: Uint8Array }
  | { readonly job: number; readonly slot: number; readonly length: number }
  | { readonly job: number; readonly error: string };

const slots: SharedArrayBuffer[] = [];

/** Open files by id, the oldest closed past OPEN_FILES (a day is a few part files per dataset). */
const OPEN_FILES = 16;
const open = new Map<string, Promise<ParquetFileReader>>();

function reader(id: string, path: string): Promise<ParquetFileReader> {
  let r = open.get(id);
  if (r) {
    open.delete(id); // to the back: most recently used
    open.set(id, r);
    return r;
  }
  r = ParquetFileReader.open(path);
  r.catch(() => open.delete(id));
  open.set(id, r);
  if (open.size > OPEN_FILES) {
    const [oldest, p] = open.entries().next().value!;
    open.delete(oldest);
    void p.then((x) => x.close()).catch(() => undefined);
  }
  return r;
}

async function decode(j: DecodeJob): Promise<DecodeAnswer> {
  try {
    const ipc = await (await reader(j.id, j.path)).readRowsIPC(j.rg, j.offset, j.limit, [...j.columns]);
    return { job: j.job, ipc };
  } catch (e) {
    return { job: j.job, error: e instanceof Error ? e.message : String(e) };
  }
}

parentPort!.on('message', (m: DecodeJob | SlotMessage) => {
  if ('sab' in m) {
    slots[m.slot] = m.sab;
    return;
  }
  const j = m;
  void decode(j).then((a) => {
    if (!('ipc' in a)) return parentPort!.postMessage(a);
    const slot = j.slot === undefined ? undefined : slots[j.slot];
    if (slot && a.ipc.byteLength <= slot.byteLength) {
      new Uint8Array(slot).set(a.ipc);
      return parentPort!.postMessage({ job: a.job, slot: j.slot!, length: a.ipc.byteLength });
    }
    // The bytes move to the other thread: a copy only when they share their buffer with others.
    const own = a.ipc.byteOffset === 0 && a.ipc.byteLength === a.ipc.buffer.byteLength ? a.ipc : a.ipc.slice();
    parentPort!.postMessage({ job: a.job, ipc: own }, [own.buffer as ArrayBuffer]);
  });
});
