// Tailing a live log from another process: read complete frames to the end of the current day
// file, then wait for a change (fs.watch on the market folder as a hint, a 100 ms poll as the
// guarantee) and cross into the next day file once one exists. Never repeats or skips a record.

import { watch, type FSWatcher } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { marketDir } from '../paths.js';
import { readFrames } from '../log/scan.js';
import type { Segment } from './segment.js';
import type { LogKey, Position, ReadItem } from '../types.js';

/** What following needs of a log's day files (FileLogReader has it; follow never imports the reader). */
export interface FollowSource {
  readonly dataDir: string;
  readonly key: LogKey;
  /** Day files present, ascending. */
  days(): Promise<string[]>;
  /** The file of one day. */
  path(day: string): string;
  /** The indexed view of one day file, or null when it does not exist. */
  segment(day: string): Promise<Segment | null>;
  /** `from` itself when a frame with its seq starts there, else the first record with seq ≥ its seq. */
  resolve(from: Position): Promise<Position | null>;
}

export const FOLLOW_POLL_MS = 100;

/** Resolves `wait()` on the next change under `dir`, after `pollMs`, or on abort. */
class ChangeWaiter {
  private watcher: FSWatcher | null = null;
  private wake: (() => void) | null = null;
  private changed = false;

  constructor(
    private readonly dir: string,
    private readonly signal: AbortSignal,
  ) {}

  private ensureWatch(): void {
    if (this.watcher) return;
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => {
        this.changed = true;
        this.wake?.();
      });
      this.watcher.on('error', () => this.closeWatch()); // the folder went away: poll until it is back
    } catch {
      this.watcher = null; // no folder yet: the poll covers it
    }
  }

  wait(pollMs: number): Promise<void> {
    this.ensureWatch();
    if (this.changed || this.signal.aborted) {
      this.changed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', done);
        this.wake = null;
        this.changed = false;
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      this.wake = done;
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  private closeWatch(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  close(): void {
    this.closeWatch();
    this.wake?.();
  }
}

export async function* followLog(reader: FollowSource, from: Position | 'start' | 'end', signal: AbortSignal): AsyncGenerator<ReadItem> {
  const waiter = new ChangeWaiter(marketDir(reader.dataDir, reader.key), signal);
  let cur: { day: string; fh: FileHandle } | null = null;
  try {
    // Where to read next; null = the first day file that exists. `minSeq` skips records before a
    // cursor whose record is not written yet.
    let pos: { day: string; offset: number } | null = null;
    let minSeq = -Infinity;
    if (from === 'end') {
      pos = await endOf(reader);
    } else if (from !== 'start') {
      // The end is taken before the seq search: a record appended while searching lies after it.
      const end = await endOf(reader);
      const p = await reader.resolve(from);
      if (p) pos = { day: p.day, offset: p.offset };
      else {
        pos = end;
        minSeq = from.seq;
      }
    }
    while (!signal.aborted) {
      // Days are listed before reading: a newer day file only appears after the writer finished
      // writing the older one, so reading the current file to its end first loses nothing.
      const days = await reader.days();
      if (pos === null) {
        if (days.length === 0) {
          await waiter.wait(FOLLOW_POLL_MS);
          continue;
        }
        pos = { day: days[0], offset: 0 };
      }
      let progressed = false;
      // The current day file stays open across polls (reopened when the day changes).
      if (!cur || cur.day !== pos.day) {
        await cur?.fh.close();
        const fh = await open(reader.path(pos.day), 'r').catch(() => null);
        cur = fh ? { day: pos.day, fh } : null;
      }
      if (cur) {
        const size = (await cur.fh.stat()).size;
        for await (const { head, rec } of readFrames(cur.fh, pos.offset, size)) {
          pos = { day: pos.day, offset: head.offset + head.size };
          progressed = true;
          if (head.seq < minSeq) continue;
          if (signal.aborted) return;
          yield { rec, pos: { day: pos.day, offset: head.offset, seq: head.seq } };
        }
      }
      const next = days.find((d) => d > pos!.day);
      if (next !== undefined) pos = { day: next, offset: 0 };
      else if (!progressed) await waiter.wait(FOLLOW_POLL_MS);
    }
  } finally {
    waiter.close();
    await cur?.fh.close();
  }
}

/** Just after the last complete frame of the newest day file (or nothing yet). */
async function endOf(reader: FollowSource): Promise<{ day: string; offset: number } | null> {
  const days = await reader.days();
  if (days.length === 0) return null;
  const day = days[days.length - 1];
  const seg = await reader.segment(day);
  return { day, offset: seg ? seg.validEnd : 0 };
}
