// Reads one logical log across its day files: seeks by time or seq through the sparse index,
// forward and backward iteration, latest/first, and as-of checkpoints. Safe in another process
// than the writer: only complete, checksummed frames are ever returned. Every multi-day operation
// is a LogView (view.ts) over this log's day files, planned once per call.

import { listDays, logFilePath } from '../paths.js';
import { LogDay } from './log-day.js';
import { segmentOf, type Segment } from './segment.js';
import { followLog } from './follow.js';
import { PlannedView } from './view.js';
import { replayFrom, ViewReader } from './view-reader.js';
import type { LogKey, LogReader, LogView, Position, ReadItem } from '../types.js';

export class FileLogReader extends ViewReader implements LogReader {
  constructor(
    readonly dataDir: string,
    readonly key: LogKey,
  ) {
    super();
  }

  days(): Promise<string[]> {
    return listDays(this.dataDir, this.key);
  }

  path(day: string): string {
    return logFilePath(this.dataDir, this.key, day);
  }

  segment(day: string): Promise<Segment | null> {
    return segmentOf(this.path(day));
  }

  /** One day file as a view's day source. */
  day(day: string): LogDay {
    return new LogDay(day, this.path(day));
  }

  async view(): Promise<LogView> {
    return new PlannedView((await this.days()).map((d) => this.day(d)));
  }

  /** The start position of a read: `from` itself when a frame with its seq is there, else by seq. */
  async resolve(from: Position | 'start'): Promise<Position | null> {
    return (await this.view()).seek(replayFrom(from));
  }

  async latest(): Promise<ReadItem | null> {
    return (await this.view()).latest();
  }

  async latestPosition(): Promise<Position | null> {
    for (const day of (await this.days()).reverse()) {
      const pos = await this.latestPositionIn(day);
      if (pos) return pos;
    }
    return null;
  }

  /** Where the newest record of one day file starts (one stat when the file is known), or null. */
  latestPositionIn(day: string): Promise<Position | null> {
    return this.day(day).latestPosition();
  }

  /** The newest record of one day file (one stat and one frame read when the file is known), or null. */
  latestIn(day: string): Promise<ReadItem | null> {
    return this.day(day).latest();
  }

  follow(from: Position | 'start' | 'end', signal: AbortSignal): AsyncIterable<ReadItem> {
    return followLog(this, from, signal);
  }
}

export function openLogReader(dataDir: string, key: LogKey): FileLogReader {
  return new FileLogReader(dataDir, key);
}
