// Part files renamed by the server: until 2026-11-27 a partition's first part was
// `<dataset>-<date>.parquet`; it is now `<dataset>-<date>-0000.parquet` (names sort in market
// order). A mirror that pulled the old name keeps it (pull never deletes), and a glob would read its
// rows twice beside the new file. So once the new first part is in place, an old-named file beside
// it that the listing no longer names, and that pull itself verified before (the sidecar knows it),
// is moved aside to `_<name>.superseded`: no `*.parquet` glob matches it, nothing is deleted.

import { rename, stat } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import type { PullCache } from './cache.js';

const FIRST_PART = /^(.+)-(\d{4}-\d{2}-\d{2})-0000\.parquet$/;

/**
 * `inPlace`: listed paths now verified locally (server path → local file); `listed`: every listed
 * path. Returns the server paths of the files moved aside.
 */
export async function retireSuperseded(
  cache: PullCache,
  inPlace: ReadonlyMap<string, string>,
  listed: ReadonlySet<string>,
): Promise<string[]> {
  const out: string[] = [];
  for (const [path, dest] of inPlace) {
    const m = FIRST_PART.exec(posix.basename(path));
    if (!m) continue;
    const name = `${m[1]}-${m[2]}.parquet`;
    const old = posix.join(posix.dirname(path), name);
    if (listed.has(old) || cache.verifiedSha(old) === null) continue;
    const file = join(dirname(dest), name);
    if (
      !(await stat(file).then(
        (s) => s.isFile(),
        () => false,
      ))
    )
      continue;
    await rename(file, join(dirname(dest), `_${name}.superseded`));
    cache.forgetVerified(old);
    out.push(old);
  }
  return out;
}
