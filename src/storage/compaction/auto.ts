// Compaction inside `start`: once a UTC day has closed and its grace period has passed, compact
// it (and any earlier closed day not yet compacted), then apply retention. The work runs in a
// worker thread (see worker.ts), one run at a time; a failure is logged and retried at
// the next tick, never thrown into the service, and a failed day or partition never holds up the
// days and partitions after it. Stopping mid-run is safe: publication is atomic.

import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { lockHolder } from '../log/lock.js';
import { stagingRoot } from '../parquet/manifest.js';
import type { Config } from '../../config.js';
import type { WorkerInput, WorkerMessage } from './worker.js';

interface Logger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** How often the service looks for a day to compact. */
const TICK_MS = 60_000;

/**
 * `observe`: every message of the worker (the service counts set-aside records and failed partitions
 * in /metrics with it; storage does not load the metrics module).
 */
export function startAutoCompaction(
  config: Config,
  logger: Logger,
  tickMs = TICK_MS,
  observe?: (m: WorkerMessage) => void,
): { stop(): Promise<void> } {
  let worker: Worker | null = null;
  let running: Promise<void> | null = null;
  let stopped = false;
  let settled: string[] = [];
  /** The running worker has said `done`: it is exiting by itself and is not terminated. */
  let finishing = false;
  const run = (): Promise<void> =>
    new Promise((resolve) => {
      finishing = false;
      const input: WorkerInput = {
        dataDir: config.dataDir,
        graceMs: config.storage.compactGraceMs,
        retentionDays: config.storage.retentionDays,
        settled,
        // One thread unless the config says 2: the day has a day to be compacted, and the recorders beside it need a core.
        threads: config.storage.compactionThreads ?? 1,
        archive: config.storage.archive,
      };
      // The young generation as the snapshot helper's (derived-split.ts): compaction's garbage is short-lived.
      // The worker reports through messages only. Its stdout is its own, never the process's: `start`'s
      // stdout carries the ready line and the request log, and a test runner's protocol (tap) would be
      // corrupted by whatever a preloaded module prints in the thread when it is terminated.
      const w = new Worker(new URL('./worker.js', import.meta.url), {
        workerData: input,
        resourceLimits: { maxYoungGenerationSizeMb: 96 },
        stdout: true,
      });
      w.stdout.resume();
      worker = w;
      w.on('message', (m: WorkerMessage) => {
        observe?.(m);
        if (m.type === 'compacted') logger.info({ day: m.day, partitions: m.partitions, rows: m.rows, threads: m.threads }, 'compacted');
        else if (m.type === 'partitions') {
          for (const p of m.failed)
            logger.error(
              { day: m.day, family: p.family, dataset: p.dataset, err: p.error },
              'partition failed; the rest of the day was compacted, retrying later',
            );
          for (const p of m.quarantined)
            logger.error(
              { day: m.day, family: p.family, dataset: p.dataset, records: p.quarantined },
              "records set aside in the partition's _quarantine.jsonl",
            );
        } else if (m.type === 'day-failed')
          logger.error({ day: m.day, err: m.error }, 'compaction of the day failed; the days after it went on, retrying later');
        else if (m.type === 'archived') {
          if (m.failed)
            logger.error(
              { days: m.days, uploaded: m.uploaded, failed: m.failed, errors: m.errors },
              'archive publish incomplete; retrying later',
            );
          else logger.info({ days: m.days, uploaded: m.uploaded, bytes: m.bytes }, 'published to the archive');
        } else if (m.type === 'archive-error') logger.error({ err: m.error }, 'archive publish failed; retrying later');
        else if (m.type === 'retention') {
          if (m.deleted) logger.info({ files: m.deleted }, 'deleted logs past retention');
          for (const k of m.kept) logger.error({ file: k.file, why: k.why }, 'log kept past retention');
        } else {
          settled = m.settled;
          finishing = true;
        }
      });
      w.on('error', (e: Error) => {
        if (!stopped) logger.error({ err: e.message }, 'compaction failed; retrying later');
      });
      w.on('exit', () => {
        worker = null;
        resolve();
      });
    });
  const tick = (): void => {
    if (running || stopped) return;
    running = run().finally(() => {
      running = null;
    });
  };
  const timer = setInterval(tick, tickMs);
  timer.unref();
  setImmediate(tick);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      // Terminating mid-run is safe: a partition appears whole or not at all; staging is cleaned next time.
      const w = worker;
      // A worker past its run is left to exit: terminating a thread that is unwinding native modules
      // (parquet-wasm, the crc32 addon) crashed the whole process with SIGSEGV once in the suite.
      if (w && !finishing) {
        await w.terminate();
        // The worker held the data dir's compaction lock under our pid: release it for the next run.
        const lock = join(stagingRoot(config.dataDir), '.lock');
        if ((await lockHolder(lock)) === process.pid) await unlink(lock).catch(() => undefined);
      }
      await running;
    },
  };
}
