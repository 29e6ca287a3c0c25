// The record process's status file, `<dataDir>/status/record-<pid>.json`, rewritten every ~2 s by
// a durable write (temp file + fsync + rename: readers never see half a file) and removed on a clean stop. The read
// side uses it for `stale` flags and /healthz: a file not updated for > 10 s means a dead process.

import { closeSync, ftruncateSync, mkdirSync, openSync, rmSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Family } from '../schema/observation.js';
import { writeFileDurableSync } from '../storage/index.js';
import type { KindStatus } from './recorder.js';
import type { StorageStats } from './storage-pause.js';

export interface StatusFile {
  readonly pid: number;
  readonly started_ts: number;
  readonly updated_ts: number;
  readonly kinds: Record<string, KindStatus>;
  /** Market ids recorded live right now, per route family. */
  readonly connected: Record<Family, string[]>;
  /** Writers paused by the disk, records dropped while paused, free bytes (absent in old files). */
  readonly storage?: StorageStats;
}

/** A status file older than this belongs to a dead process. */
export const STATUS_STALE_MS = 10_000;

export function statusDir(dataDir: string): string {
  return join(dataDir, 'status');
}

export function statusPath(dataDir: string, pid = process.pid): string {
  return join(statusDir(dataDir), `record-${pid}.json`);
}

/**
 * Writes the file durably (storage's writeFileDurableSync). On a full disk the temp file cannot be
 * made, so the existing file is overwritten in place instead: its blocks are already allocated, so
 * /healthz still learns that writers are paused (a reader that meets the file mid-write skips it
 * once). Errors are returned, not thrown.
 */
export function writeStatus(dataDir: string, status: StatusFile): Error | null {
  const path = statusPath(dataDir, status.pid);
  // Padded with spaces (JSON allows them) to whole 4 KiB blocks with at least 1 KiB to spare, so
  // the in-place overwrite below still fits when the next status is a little longer.
  const json = JSON.stringify(status);
  const text = json.padEnd(Math.ceil((json.length + 1024) / 4096) * 4096, ' ');
  try {
    const dir = statusDir(dataDir);
    mkdirSync(dir, { recursive: true });
    writeFileDurableSync(path, text);
    return null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC' && (e as NodeJS.ErrnoException).code !== 'EDQUOT') return e as Error;
    try {
      const fd = openSync(path, 'r+');
      try {
        const buf = Buffer.from(text);
        writeSync(fd, buf, 0, buf.length, 0);
        ftruncateSync(fd, buf.length); // shrinking frees blocks; growing (rare: see the padding) may fail
      } finally {
        closeSync(fd);
      }
      return null;
    } catch {
      return e as Error;
    }
  }
}

export function removeStatus(dataDir: string, pid = process.pid): void {
  rmSync(statusPath(dataDir, pid), { force: true });
  // A temp file of a write the process was killed in (see writeFileDurableSync's names).
  const temp = `.record-${pid}.json.tmp-`;
  let names: string[] = [];
  try {
    names = readdirSync(statusDir(dataDir));
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith(temp)) rmSync(join(statusDir(dataDir), n), { force: true });
}

/**
 * Every readable status file of the data dir, with `alive` = updated within STATUS_STALE_MS.
 * Unreadable or half-written files are skipped (a writer may be renaming right now).
 */
export function readStatuses(dataDir: string, now = Date.now()): Array<StatusFile & { alive: boolean }> {
  let names: string[];
  try {
    names = readdirSync(statusDir(dataDir));
  } catch {
    return [];
  }
  const out: Array<StatusFile & { alive: boolean }> = [];
  for (const n of names) {
    if (!/^record-\d+\.json$/.test(n)) continue;
    try {
      const s = JSON.parse(readFileSync(join(statusDir(dataDir), n), 'utf8')) as StatusFile;
      out.push({ ...s, alive: now - s.updated_ts <= STATUS_STALE_MS });
    } catch {
      // skip
    }
  }
  return out;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes status files left by killed record processes (not updated for STATUS_STALE_MS and the
 * pid is gone), so they do not pile up across kill -9 restarts; live processes run it with every
 * status refresh. Returns the pids removed.
 */
export function removeDeadStatuses(dataDir: string, now = Date.now()): number[] {
  const removed: number[] = [];
  for (const s of readStatuses(dataDir, now)) {
    if (s.alive || s.pid === process.pid || pidAlive(s.pid)) continue;
    removeStatus(dataDir, s.pid);
    removed.push(s.pid);
  }
  return removed;
}
