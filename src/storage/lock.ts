// The single-writer lock of one market folder: a `.lock` file created with O_EXCL holding the
// holder's pid. A live holder (another process, or another writer in this one) is refused with
// LockedError; the lock of a dead process (kill -9 leaves it behind) is taken over.

import { open, readFile, unlink } from 'node:fs/promises';
import { LockedError, StorageError } from '../errors.js';

/** Writers of this process, by lock path: a second writer in the same process is refused too. */
const heldHere = new Set<string>();

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** The pid recorded in a lock file, or null when it is unreadable or holds no pid. */
export async function lockHolder(lockPath: string): Promise<number | null> {
  try {
    const text = (await readFile(lockPath, 'utf8')).trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

/** True when a live process holds the lock at `lockPath`. */
export async function isLockedByLiveProcess(lockPath: string): Promise<boolean> {
  const pid = await lockHolder(lockPath);
  return pid !== null && alive(pid) && (pid !== process.pid || heldHere.has(lockPath));
}

/** Takes the lock or throws LockedError; returns the function that releases it. */
export async function acquireLock(lockPath: string): Promise<() => Promise<void>> {
  if (heldHere.has(lockPath)) throw new LockedError(lockPath, process.pid);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fh = await open(lockPath, 'wx');
      try {
        await fh.writeFile(`${process.pid}\n`);
        await fh.sync();
      } finally {
        await fh.close();
      }
      heldHere.add(lockPath);
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        heldHere.delete(lockPath);
        if ((await lockHolder(lockPath)) === process.pid) await unlink(lockPath).catch(() => undefined);
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const pid = await lockHolder(lockPath);
    // A lock with our own pid that this process does not hold is a leftover of a previous process
    // that had the same pid (pids are reused across restarts, e.g. pid 1 in containers).
    if (pid !== null && alive(pid) && pid !== process.pid) throw new LockedError(lockPath, pid);
    if (pid === null) {
      // Possibly a holder that created the file and has not yet written its pid: give it a moment.
      await new Promise((r) => setTimeout(r, 50));
      const again = await lockHolder(lockPath);
      if (again !== null && alive(again) && again !== process.pid) throw new LockedError(lockPath, again);
    }
    // Dead holder: remove its lock and retry the exclusive create (a racing taker loses there).
    await unlink(lockPath).catch(() => undefined);
  }
  throw new StorageError(`could not take the lock ${lockPath}`, lockPath);
}
