// The sidecar `DIR/.pmtape-pull.json` of `pmtape pull`: which local files were verified against
// which sha256, so a second run does not re-hash gigabytes. It is only a cache: a missing,
// unreadable or out-of-date sidecar costs a re-hash, never a wrong file. Written at most every
// few seconds and at the end, so mirroring many small files stays linear.

import type { BigIntStats } from 'node:fs';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CACHE_FILE } from './paths.js';

/**
 * What a verified file looked like when it was hashed. Size, mtime and ctime in nanoseconds and the
 * inode must all be unchanged for the cached sha256 to be trusted. Any write changes mtime and
 * ctime; restoring mtime (touch -d, utimes) still changes ctime, which no user call can set back.
 */
interface Verified {
  readonly size: string;
  readonly mtime_ns: string;
  readonly ctime_ns: string;
  readonly ino: string;
  readonly sha256: string;
}

interface Sidecar {
  version: 1;
  verified: Record<string, Verified>;
}

/** How often verified files are written down while a pull runs (a crash loses at most this). */
const SAVE_EVERY_MS = 2000;

const fingerprint = (st: BigIntStats): Omit<Verified, 'sha256'> => ({
  size: String(st.size),
  mtime_ns: String(st.mtimeNs),
  ctime_ns: String(st.ctimeNs),
  ino: String(st.ino),
});

export class PullCache {
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly file: string,
    private readonly data: Sidecar,
  ) {}

  /** Reads `DIR/.pmtape-pull.json`; anything unreadable starts an empty cache. */
  static async open(outDir: string): Promise<PullCache> {
    const file = join(outDir, CACHE_FILE);
    let data: Sidecar = { version: 1, verified: {} };
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<Sidecar> | null;
      if (parsed && parsed.version === 1 && typeof parsed.verified === 'object' && parsed.verified !== null) {
        data = { version: 1, verified: { ...parsed.verified } };
      }
    } catch {
      // no sidecar yet, or a damaged one: every local file is hashed once more
    }
    return new PullCache(file, data);
  }

  /** True when `file` is unchanged since it was verified to have `sha256`. */
  async trusts(path: string, file: string, sha256: string): Promise<boolean> {
    const v = this.data.verified[path];
    if (!v || v.sha256 !== sha256) return false;
    const st = await stat(file, { bigint: true }).catch(() => null);
    if (!st) return false;
    const now = fingerprint(st);
    return now.size === v.size && now.mtime_ns === v.mtime_ns && now.ctime_ns === v.ctime_ns && now.ino === v.ino;
  }

  async setVerified(path: string, file: string, sha256: string): Promise<void> {
    const st = await stat(file, { bigint: true });
    this.data.verified[path] = { ...fingerprint(st), sha256 };
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.save().catch(() => undefined); // retried by the next save; the last one reports
    }, SAVE_EVERY_MS);
  }

  /** The sha256 pull last verified for `path` (whatever the file is now), or null: pull wrote it. */
  verifiedSha(path: string): string | null {
    return this.data.verified[path]?.sha256 ?? null;
  }

  forgetVerified(path: string): void {
    delete this.data.verified[path];
  }

  /** The final save: cancels the pending one and writes now. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.save();
  }

  /**
   * Writes the sidecar (temp file + rename, so a crash leaves the old or the new one). Saves are
   * serialised; callers arriving during a write share the next one.
   */
  save(): Promise<void> {
    this.dirty = true;
    // A failed write (disk full) fails its callers, not every later save.
    this.writing = this.writing
      .catch(() => undefined)
      .then(async () => {
        if (!this.dirty) return;
        this.dirty = false;
        const tmp = `${this.file}.tmp`;
        await writeFile(tmp, JSON.stringify(this.data));
        await rename(tmp, this.file);
      });
    return this.writing;
  }
}
