// Push notice that a market's log changed, for readers in another process than the writer (the
// latest-book cache of `serve`): one `fs.watch` (inotify on Linux) per market folder, shared by
// every subscriber of that folder. A log append, a new day file (day rollover) and a log deleted
// after compaction are all changes of a file in the market folder, so one watch sees them all.
//
// Why fs.watch and not chokidar: chokidar adds globbing, polling fallbacks and event normalisation
// on top of the same fs.watch; here one folder per market is watched and any event only means
// "look again", so there is nothing for it to normalise (and it was removed from the project).
//
// A watch is a hint, never the only guarantee: subscribers keep a periodic re-check (see
// LatestBooks). When a market has no folder yet (served from Parquet alone, or not recorded yet),
// the nearest existing parent (family or stream folder, logs root, data dir) is watched instead; the first
// event there ends that subscription so the subscriber re-subscribes and finds the market's folder.

import { existsSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { marketDir } from '../paths.js';
import type { LogKey } from '../types.js';

export interface LogChangeSubscription {
  /** False once the watch ended (folder removed, watch error, parent watch fired): re-subscribe. */
  readonly live: boolean;
  close(): void;
}

interface Watched {
  readonly watcher: FSWatcher;
  readonly subs: Set<Sub>;
}

class Sub implements LogChangeSubscription {
  live = true;
  constructor(
    readonly dir: string,
    /** True when watching a parent because the market folder did not exist. */
    readonly parent: boolean,
    readonly onChange: () => void,
    private readonly owner: LogChanges,
  ) {}

  close(): void {
    if (!this.live) return;
    this.live = false;
    this.owner.release(this);
  }
}

export class LogChanges {
  private readonly dirs = new Map<string, Watched>();

  /**
   * @param maxDirs the most folders watched at once (each is one inotify watch of the user's
   *   `fs.inotify.max_user_watches`); past it `subscribe` answers null and the caller checks per request.
   */
  constructor(
    readonly dataDir: string,
    private readonly maxDirs = 4096,
  ) {}

  /** Folders watched now (tests and /metrics). */
  get watched(): number {
    return this.dirs.size;
  }

  /**
   * Calls `onChange` (from the event loop, never synchronously) whenever something in the log's
   * folder changes. Null when no watch could be set (limit reached, watch refused): check by hand.
   */
  subscribe(key: LogKey, onChange: () => void): LogChangeSubscription | null {
    return this.subscribeDir(marketDir(this.dataDir, key), onChange);
  }

  /**
   * The same for any folder under the data dir: a stream folder reports market folders created or
   * removed (not what happens inside them: a folder watch is not recursive).
   */
  subscribeDir(own: string, onChange: () => void): LogChangeSubscription | null {
    // The nearest folder that exists: whatever is created under it first is a direct child, which
    // is all a folder watch reports (the data dir itself is the last resort).
    let dir = own;
    while (!existsSync(dir)) {
      if (dir === this.dataDir || dirname(dir) === dir) return null;
      dir = dirname(dir);
    }
    let w = this.dirs.get(dir);
    if (!w) {
      if (this.dirs.size >= this.maxDirs) return null;
      let watcher: FSWatcher;
      try {
        watcher = watch(dir, { persistent: false }, (event) => this.fire(dir, event));
      } catch {
        return null; // ENOSPC (inotify limit), EACCES, or the folder went away since existsSync
      }
      w = { watcher, subs: new Set() };
      const self = w;
      // The folder was removed or the watch failed: every subscriber looks again and re-subscribes.
      watcher.on('error', () => this.end(dir, self));
      this.dirs.set(dir, w);
    }
    const sub = new Sub(dir, dir !== own, onChange, this);
    w.subs.add(sub);
    return sub;
  }

  private fire(dir: string, event: string): void {
    const w = this.dirs.get(dir);
    if (!w) return;
    // Appends are 'change'; a file or the folder itself created or removed is 'rename'. inotify
    // says nothing more once a watched folder is removed (and Node emits no error), so look.
    if (event === 'rename' && !existsSync(dir)) return this.end(dir, w);
    for (const s of [...w.subs]) {
      if (s.parent) s.close(); // the market's folder may exist now: re-subscribe to it
      s.onChange();
    }
  }

  private end(dir: string, w: Watched): void {
    if (this.dirs.get(dir) !== w) return;
    this.dirs.delete(dir);
    w.watcher.close();
    for (const s of [...w.subs]) {
      s.live = false;
      s.onChange();
    }
    w.subs.clear();
  }

  /** Called by a subscription's close(): the folder's watch ends with its last subscriber. */
  release(sub: Sub): void {
    const w = this.dirs.get(sub.dir);
    if (!w) return;
    w.subs.delete(sub);
    if (w.subs.size === 0) {
      this.dirs.delete(sub.dir);
      w.watcher.close();
    }
  }

  /** Ends every watch (server shutdown). */
  close(): void {
    for (const [dir, w] of [...this.dirs]) this.end(dir, w);
  }
}
