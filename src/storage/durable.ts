// Durable small-file writes, LevelDB's CURRENT way: write a temp file in the same folder, fsync it,
// rename it over the published name, fsync the folder. A reader (or a process restarted after a
// crash) sees the old file or the new one, never a part; the temp name never becomes the published one.
//
// One error policy for directory fsync: some filesystems (and some platforms) refuse fsync on a
// directory with EINVAL/ENOTSUP/EISDIR/EPERM/EBADF; that is not a failure of this write, so it is
// ignored. Any other error (EIO, ENOSPC, ...) means the rename may not survive a power loss: it throws.

import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { open, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface DurableWriteOptions {
  /** File mode of a newly created file (e.g. 0o600 for secrets); default 0o666 before umask. */
  readonly mode?: number;
}

/** Codes that mean "this filesystem does not fsync directories", not "the data is at risk". */
const DIR_FSYNC_UNSUPPORTED = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP', 'EISDIR', 'EPERM', 'EBADF']);

const unsupported = (e: unknown): boolean => DIR_FSYNC_UNSUPPORTED.has((e as NodeJS.ErrnoException).code ?? '');

/** True for a temp file name of this module (a crash can leave one behind; cleanup removes it). */
export const isDurableTemp = (name: string): boolean => /^\..+\.tmp-\d+-\d+$/.test(name);

let tmpCounter = 0;
/** A hidden name in the same folder (rename across folders is not atomic), unique per call. */
function tempPathOf(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${tmpCounter++}`);
}

/** fsyncs a folder so the names created, renamed or removed in it survive a power loss. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch (e) {
    if (!unsupported(e)) throw e;
  } finally {
    await fh.close();
  }
}

/** fsyncDir for synchronous callers (same policy). */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } catch (e) {
    if (!unsupported(e)) throw e;
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces `path` with `data` durably: complete and fsynced when this resolves, the old content
 * (or no file) when it throws or the process dies first. The temp file is removed on errors.
 */
export async function writeFileDurable(path: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): Promise<void> {
  const tmp = tempPathOf(path);
  try {
    const fh = await open(tmp, 'w', opts.mode);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
  await fsyncDir(dirname(path));
}

/** A durable write in two steps (prepareDurable): the temp file is on disk; `commit` publishes it. */
export interface PreparedWrite {
  /** Renames the temp file over the published name and fsyncs the folder (writeFileDurable's end). */
  commit(): Promise<void>;
  /** Removes the temp file: the published name keeps its old content (or stays absent). */
  abort(): Promise<void>;
}

/**
 * writeFileDurable split where a caller waits on something else: the temp file is written and
 * fsynced now, while (say) a request is in flight, and made the file only by `commit`, once what
 * it records is true. A crash before the commit leaves the old file; the temp name is never read.
 */
export async function prepareDurable(path: string, data: string | Uint8Array): Promise<PreparedWrite> {
  const tmp = tempPathOf(path);
  const abort = (): Promise<void> => unlink(tmp).catch(() => undefined);
  try {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (e) {
    await abort();
    throw e;
  }
  return {
    commit: async () => {
      try {
        await rename(tmp, path);
      } catch (e) {
        await abort();
        throw e;
      }
      await fsyncDir(dirname(path));
    },
    abort,
  };
}

/**
 * Replaces `path` with `data` atomically for readers (a temp file renamed over it) but without an
 * fsync: a killed process leaves the old file or the new one, a power loss may leave either, an
 * empty file or none. Only for a note whose loss costs work and never correctness (publish.ts's
 * note that uploads began: absent, empty or torn, it reads as "not begun").
 */
export async function replaceFile(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = tempPathOf(path);
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}

/** writeFileDurable for synchronous callers (the recorder's status file is written from a timer). */
export function writeFileDurableSync(path: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): void {
  const tmp = tempPathOf(path);
  try {
    const fd = openSync(tmp, 'w', opts.mode);
    try {
      const buf = typeof data === 'string' ? Buffer.from(data) : data;
      let done = 0;
      while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // nothing to remove
    }
    throw e;
  }
  fsyncDirSync(dirname(path));
}
