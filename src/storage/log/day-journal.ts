// The day journal of a stream: one line `<market folder>\t<day>\n` appended to
// `_coverage/family=<family>/journal-<stream>` whenever a day file of the stream may change other
// than by an append to today's file: a writer creating a day file or writing to one of a past day
// (an import, a late record: every batch), retention deleting one, a recovery or repair cutting one.
// A reader that took a census of the stream's day files (log-census.ts) then knows which logs
// changed since from the journal's tail alone, instead of listing every market's folder. The line is
// appended before the file changes, so a reader that finds no line for a log since its census knows
// that log is as the census saw it. It lives beside the census, outside `logs/`, so nothing that
// walks the log tree (tools, scripts, a backup's filter) meets a file that is not a market's folder.

import { appendFile, mkdir, open } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Family, StreamName } from '../../schema/observation.js';
import { encodeMarket } from '../paths.js';
import type { LogKey } from '../types.js';

export const dayJournalPath = (dataDir: string, family: Family, stream: StreamName): string =>
  join(dataDir, '_coverage', `family=${family}`, `journal-${stream}`);

/** One whole line in one O_APPEND write (whole lines, whatever else appends); the folder made on first use. */
async function appendLine(path: string, line: string): Promise<void> {
  try {
    await appendFile(path, line);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    await mkdir(dirname(path), { recursive: true });
    await appendFile(path, line);
  }
}

/** Appends the line of one log's day. */
export async function journalDay(dataDir: string, key: LogKey, day: string): Promise<void> {
  await appendLine(dayJournalPath(dataDir, key.family, key.stream), `${encodeMarket(key.market)}\t${day}\n`);
}

/**
 * `journalDay` for a caller that holds only a day file's path
 * (`<data>/logs/<family>/<stream>/<market>/<day>.log`): a repair or a recovery about to cut it.
 */
export async function journalLogFile(logPath: string): Promise<void> {
  const marketDir = dirname(logPath);
  const streamDir = dirname(marketDir);
  const familyDir = dirname(streamDir);
  const dataDir = dirname(dirname(familyDir));
  const path = dayJournalPath(dataDir, basename(familyDir) as Family, basename(streamDir) as StreamName);
  await appendLine(path, `${basename(marketDir)}\t${basename(logPath).slice(0, 10)}\n`);
}

/**
 * The market folders named by the journal from byte `from` on, and the journal's size now; null
 * when the journal is shorter than `from` (replaced: nothing can be said).
 */
export async function journalSince(
  dataDir: string,
  family: Family,
  stream: StreamName,
  from: number,
): Promise<{ folders: Set<string>; size: number } | null> {
  let fh;
  try {
    fh = await open(dayJournalPath(dataDir, family, stream), 'r');
  } catch {
    return from === 0 ? { folders: new Set(), size: 0 } : null;
  }
  try {
    const size = (await fh.stat()).size;
    if (size < from) return null;
    const folders = new Set<string>();
    if (size === from) return { folders, size };
    const buf = Buffer.alloc(size - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    // Whole lines only: one being appended right now is read next time, from its start.
    const end = buf.subarray(0, bytesRead).lastIndexOf(10) + 1;
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      const folder = line.split('\t')[0];
      if (folder) folders.add(folder);
    }
    return { folders, size: from + end };
  } finally {
    await fh.close();
  }
}
