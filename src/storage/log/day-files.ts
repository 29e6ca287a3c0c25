// The day file a writer has open (its log and index handles) and the file side of one batch:
// frames and index entries written per day segment, one fdatasync of the log at the end. A day
// rollover fsyncs and closes the old file before the new one receives any byte; a new file gets
// its format header in the same write as its first frames, and its folder is fsynced.

import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StorageError } from '../../errors.js';
import { fsyncDir } from '../durable.js';
import { indexPathOf, logFilePath } from '../paths.js';
import type { LogKey } from '../types.js';
import { writeAll, type Batch } from './batch.js';
import { diskFault, errnoError } from './disk-faults.js';
import { encodeFileHeader, FILE_HEADER_BYTES } from './file-header.js';
import { journalDay } from './day-journal.js';
import { utcDay } from '../../schema/time.js';

export class DayFiles {
  private day: string | null = null;
  private log: FileHandle | null = null;
  private idx: FileHandle | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly key: LogKey,
  ) {}

  /** Writes every segment of `b` to its day file and index, then fdatasyncs the log. */
  async writeBatch(b: Batch): Promise<void> {
    for (const seg of b.segments) {
      const created = seg.day !== this.day && (await this.switchTo(seg.day, seg.startOffset));
      // Every batch into a past day's file is journaled before it is written (not only the
      // opening): a census taken while such a writer runs names the file changed after it.
      if (!created && seg.day < utcDay(Date.now())) await journalDay(this.dataDir, this.key, seg.day);
      const path = logFilePath(this.dataDir, this.key, seg.day);
      await writeAll(this.log!, created ? [encodeFileHeader(), ...seg.frames.parts] : seg.frames.parts, path);
      if (seg.entries.parts.length > 0) await writeAll(this.idx!, seg.entries.parts, indexPathOf(path));
    }
    // The index is derived data: it is not fsynced per batch (recovery rebuilds what a crash loses).
    const path = logFilePath(this.dataDir, this.key, this.day!);
    const injected = diskFault('sync', path);
    if (injected) throw errnoError(injected, 'fdatasync', path);
    await this.log!.datasync();
  }

  /**
   * Day rollover: the old file is fsynced and closed before the new one receives any byte. True
   * when the file is new (empty): the caller writes its format header first.
   */
  private async switchTo(day: string, expectedSize: number): Promise<boolean> {
    if (this.log) {
      await this.log.datasync();
      await this.close();
    }
    const path = logFilePath(this.dataDir, this.key, day);
    const log = await open(path, 'a');
    const idx = await open(indexPathOf(path), 'a').catch(async (e: unknown) => {
      await log.close();
      throw e;
    });
    this.log = log;
    this.idx = idx;
    this.day = day;
    const size = (await log.stat()).size;
    const created = size === 0;
    // A new day file, or one of a past day (an import, a late record): journaled before its first
    // byte, so a census of the stream's logs learns it changed (day-journal.ts).
    if (created || day < utcDay(Date.now()))
      await journalDay(this.dataDir, this.key, day).catch(async (e: unknown) => {
        await this.close();
        throw e;
      });
    if ((created ? FILE_HEADER_BYTES : size) !== expectedSize) {
      throw new StorageError(`${path} is ${size} bytes, expected ${expectedSize}: another process wrote it`, path, size);
    }
    if (created) await fsyncDir(dirname(path)); // the new file's name must survive a power loss
    return created;
  }

  /** Closes the open day file (the next batch opens it again). */
  async close(): Promise<void> {
    const log = this.log;
    const idx = this.idx;
    this.log = null;
    this.idx = null;
    this.day = null;
    if (log) await log.close();
    if (idx) await idx.close();
  }
}
