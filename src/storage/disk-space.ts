// Free space of the filesystem that holds the data dir, as an unprivileged process may use it
// (statfs `bavail`, not `bfree`: root's reserve is not ours). Null when it cannot be asked.

import { statfs } from 'node:fs/promises';

export async function freeBytes(dir: string): Promise<number | null> {
  try {
    const s = await statfs(dir);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}
