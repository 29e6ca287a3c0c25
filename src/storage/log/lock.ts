// The single-writer lock of one market folder: a `.lock` file created with O_EXCL holding the
// holder's pid. A live holder (another process, or another writer in this one) is refused with
// LockedError; the lock of a dead process (kill -9 leaves it behind) is taken over.

import { readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { LockedError, StorageError } from '../../errors.js';

/** Writers of this process, by lock path: a second writer in the same process is refused too. */
const heldHere = new Set<string>();

/**
 * When process `pid` started (Linux: field 22 of /proc/<pid>/stat, in clock ticks since boot), or
 * null where that is unknown. With it a lock survives pid reuse: after a crash and restart (e.g. in
 * a container) another process may well have the dead holder's pid.
 */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null; // fields[0] is field 3 (state)
  } catch {
    return null;
  }
}

function alive(pid: number, started: string | null): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: exists, someone else's
  }
  if (started === null) return true;
  const now = startTime(pid);
  return now === null || now === started;
}

interface Holder {
  readonly pid: number;
  readonly started: string | null;
}

/** The holder recorded in a lock file (`<pid> [<start time>]`), or null when unreadable. */
async function readHolder(lockPath: string): Promise<Holder | null> {
  try {
    const m = /^(\d+)(?: (\d+))?$/.exec((await readFile(lockPath, 'utf8')).trim());
    return m ? { pid: Number(m[1]), started: m[2] ?? null } : null;
  } catch {
    return null;
  }
}

/** The pid recorded in a lock file, or null when it is unreadable or holds no pid. */
export async function lockHolder(lockPath: string): Promise<number | null> {
  return (await readHolder(lockPath))?.pid ?? null;
}

/** True when a live process holds the lock at `lockPath`. */
export async function isLockedByLiveProcess(lockPath: string): Promise<boolean> {
  const h = await readHolder(lockPath);
  return h !== null && alive(h.pid, h.started) && (h.pid !== process.pid || heldHere.has(lockPath));
}

/** Takes the lock or throws LockedError; returns the function that releases it. */
export async function acquireLock(lockPath: string): Promise<() => Promise<void>> {
  if (heldHere.has(lockPath)) throw new LockedError(lockPath, process.pid);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fh = await open(lockPath, 'wx');
      try {
        const started = startTime(process.pid);
        await fh.writeFile(`${process.pid}${started === null ? '' : ` ${started}`}\n`);
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
    const h = await readHolder(lockPath);
    // A lock with our own pid that this process does not hold is a leftover of a previous process
    // that had the same pid (pids are reused across restarts, e.g. pid 1 in containers).
    if (h !== null && alive(h.pid, h.started) && h.pid !== process.pid) throw new LockedError(lockPath, h.pid);
    if (h === null) {
      // Possibly a holder that created the file and has not yet written its pid: give it a moment.
      await new Promise((r) => setTimeout(r, 50));
      const again = await readHolder(lockPath);
      if (again !== null && alive(again.pid, again.started) && again.pid !== process.pid) throw new LockedError(lockPath, again.pid);
    }
    // Dead holder: remove its lock and retry the exclusive create (a racing taker loses there).
    await unlink(lockPath).catch(() => undefined);
  }
  throw new StorageError(`could not take the lock ${lockPath}`, lockPath);
}
