// Full checks of every log and index under a data dir (`pmtape verify`): each log is scanned from
// its first byte, each index is compared with a rebuild from that scan. Repair truncates a log at
// its first bad or short frame and rewrites indexes (temp file, fsync, rename, fsync the folder).

import { open, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileDurable } from './durable.js';
import { journalLogFile } from './log/day-journal.js';
import { isLockedByLiveProcess } from './log/lock.js';
import { indexPathOf, listDays, listKeys, lockFilePath, logFilePath, marketDir } from './paths.js';
import { readIndexFile } from './log/recovery.js';
import { scanFrames } from './log/scan.js';
import { readFileStart } from './log/file-header.js';
import { forgetSegment } from './read/segment.js';
import { DEFAULT_INDEX_EVERY_BYTES, ENTRY_BYTES, IndexEntries } from './log/time-index.js';
import type { FileCheck } from './types.js';

export interface VerifyOptions {
  readonly repair: boolean;
  /** Called after each file with (files done, files total, the file). */
  readonly onProgress?: (done: number, total: number, file: string) => void;
}

export interface CheckLogOptions {
  readonly repair: boolean;
  /**
   * The file is the newest day of a log whose writer is alive: an incomplete last frame is a
   * write in progress, the index may lag, and nothing is repaired under the writer.
   */
  readonly live?: boolean;
}

/** Checks one day file and its index; returns one FileCheck for each. */
export async function checkLogFile(logPath: string, opts: CheckLogOptions): Promise<FileCheck[]> {
  const live = opts.live === true;
  const repair = opts.repair && !live;
  const idxPath = indexPathOf(logPath);
  const fh = await open(logPath, repair ? 'r+' : 'r');
  const entries = new IndexEntries();
  let logCheck: FileCheck;
  try {
    const size = (await fh.stat()).size;
    // An unknown format version or a damaged header throws here, naming the file; nothing is repaired.
    const fileStart = await readFileStart(fh, size, logPath);
    const stop = await scanFrames(fh, 0, size, (head) => {
      entries.consider(head, DEFAULT_INDEX_EVERY_BYTES);
    });
    if (stop.reason === 'eof' || (live && stop.reason === 'short')) {
      logCheck = { file: logPath, ok: true };
    } else {
      const problem =
        fileStart.kind === 'torn'
          ? 'torn file header: the file holds no record'
          : stop.reason === 'short'
            ? 'torn tail: incomplete last frame'
            : `damaged frame: ${stop.problem ?? 'invalid'}`;
      let repaired = false;
      if (repair) {
        await journalLogFile(logPath); // before the cut: a census of the logs learns it changed
        await fh.truncate(stop.end);
        await fh.sync();
        forgetSegment(logPath);
        repaired = true;
      }
      logCheck = {
        file: logPath,
        ok: false,
        damageOffset: stop.end,
        problem: `${problem}; ${size - stop.end} bytes from here are unreadable`,
        repaired,
      };
    }
  } finally {
    await fh.close();
  }
  const expected = entries.toBuffer();
  const actual = (await readIndexFile(idxPath)) ?? Buffer.alloc(0);
  const problem = compareIndex(actual, expected, live);
  if (problem === null) return [logCheck, { file: idxPath, ok: true }];
  let repaired = false;
  if (repair) {
    await writeFileDurable(idxPath, expected);
    forgetSegment(logPath);
    repaired = true;
  }
  return [logCheck, { file: idxPath, ok: false, damageOffset: problem.offset, problem: problem.text, repaired }];
}

/** Null when the index matches (a live index may lag the log), else where and how it differs. */
function compareIndex(actual: Buffer, expected: Buffer, live: boolean): { offset: number; text: string } | null {
  const n = Math.min(actual.length, expected.length);
  for (let at = 0; at < n; at += ENTRY_BYTES) {
    const end = Math.min(at + ENTRY_BYTES, n);
    if (!actual.subarray(at, end).equals(expected.subarray(at, end))) {
      return { offset: at, text: `index entry ${at / ENTRY_BYTES} does not match the log (stale or damaged index)` };
    }
  }
  if (actual.length === expected.length) return null;
  if (live) return null; // the writer appends index entries just after the frames they point at
  if (actual.length < expected.length) {
    return {
      offset: actual.length,
      text:
        actual.length === 0
          ? 'index missing or empty'
          : `index lacks ${Math.ceil((expected.length - actual.length) / ENTRY_BYTES)} entries`,
    };
  }
  return { offset: expected.length, text: `index has ${actual.length - expected.length} bytes beyond the log's valid frames` };
}

/**
 * Checks every log and index under `dataDir` (repairing when asked). The newest day of a log
 * whose writer is alive is checked as live (see CheckLogOptions) and never modified.
 */
export async function verifyDataDir(dataDir: string, opts: VerifyOptions): Promise<FileCheck[]> {
  const files: Array<{ path: string; live: boolean }> = [];
  const out: FileCheck[] = [];
  for (const key of await listKeys(dataDir)) {
    const days = await listDays(dataDir, key);
    const locked = days.length > 0 && (await isLockedByLiveProcess(lockFilePath(dataDir, key)));
    days.forEach((day, i) => files.push({ path: logFilePath(dataDir, key, day), live: locked && i === days.length - 1 }));
    // An index whose log is gone (deleted by hand) is stale data a reader would never use.
    const dir = marketDir(dataDir, key);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const m = /^(\d{4}-\d{2}-\d{2})\.idx$/.exec(name);
      if (!m || days.includes(m[1])) continue;
      if (opts.repair) await unlink(join(dir, name)).catch(() => undefined);
      out.push({ file: join(dir, name), ok: false, problem: 'index without a log', repaired: opts.repair });
    }
  }
  let done = 0;
  for (const f of files) {
    try {
      out.push(...(await checkLogFile(f.path, { repair: opts.repair, live: f.live })));
    } catch (e) {
      out.push({ file: f.path, ok: false, problem: `cannot be checked: ${(e as Error).message}`, repaired: false });
    }
    opts.onProgress?.(++done, files.length, f.path);
  }
  return out;
}
