// `pmtape serve`: the API server only (read side). It reads whatever any record process writes to
// the same data dir, picks up keys created or revoked by `pmtape keys` while running, prints
// `ready <url>` once it accepts requests, and exits 0 after a clean close on SIGTERM/SIGINT.
// With an archive configured and no logs in the data dir (or with --live-from), it is a stateless
// reader: closed days come from the bucket (docs/archive.md, "Stateless readers").

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DAY_MS, dayStartMs } from '../schema/time.js';
import type { Command } from 'commander';
import { commonOptions, configFrom, onShutdown, printReady } from './common.js';
import { logsRoot } from '../storage/index.js';
import { keysPath } from '../api/plugins/keys.js';

/** How often a stateless reader checks the archive's keys file (a revocation applies this fast). */
const KEYS_POLL_MS = 2_000;

/** How often a stateless reader looks for days published since it started. */
const REFRESH_MS = 60_000;

export function register(program: Command): void {
  commonOptions(
    program
      .command('serve')
      .description('API server only: serves what record processes write to the data dir')
      .option('--port <n>', 'API port (env PMTAPE_PORT, default 8080; 0 = ephemeral)')
      .option('--host <h>', 'bind address (env PMTAPE_HOST, default 127.0.0.1)')
      .option('--live-from <url>', 'a reader without logs: closed days from the archive, newer times (and the stream) from this server'),
  ).action(async (opts: { dataDir?: string; config?: string; port?: string; host?: string; liveFrom?: string }) => {
    const config = configFrom(opts);
    // A reader: asked to (--live-from), or no local data at all (neither logs nor Parquet), or a
    // data dir an earlier reader made (it has the range cache).
    const dir = config.dataDir;
    const reader =
      config.storage.archive !== null &&
      (opts.liveFrom !== undefined ||
        existsSync(join(dir, 'archive-cache')) ||
        (!existsSync(logsRoot(dir)) && !existsSync(join(dir, 'parquet'))));
    if (opts.liveFrom !== undefined && config.storage.archive === null) {
      throw new Error('serve --live-from needs an archive: set storage.archive.url in the config file or PMTAPE_ARCHIVE_URL');
    }
    if (opts.liveFrom !== undefined && !/^https?:\/\/[^/]/.test(opts.liveFrom)) {
      throw new Error(`serve --live-from must be the live server's URL (http://host:port or https://…), not "${opts.liveFrom}"`);
    }
    let stopRefresh = (): void => undefined;
    let archiveEnd = -Infinity;
    if (reader) {
      const { mountArchive } = await import('../storage/index.js');
      const warn = (m: string): void => void process.stderr.write(`${m}\n`);
      const mount = await mountArchive(config.dataDir, config.storage.archive, config.storage.archiveCacheBytes, warn);
      process.stderr.write(`serve: reading ${mount.days().length} archived day(s) from ${config.storage.archive.url}\n`);
      const endOf = (): number => {
        const last = mount.days().at(-1);
        return last === undefined ? -Infinity : dayStartMs(last)! + DAY_MS;
      };
      archiveEnd = endOf();
      const timer = setInterval(
        () =>
          void mount.refresh().then(
            () => (archiveEnd = endOf()),
            (e: Error) => warn(`archive refresh: ${e.message}`),
          ),
        REFRESH_MS,
      );
      timer.unref();
      // Keys come from the archive's copy (written by `pmtape keys` on the recorder hosts).
      const { followKeys } = await import('../storage/index.js');
      const stopKeys = await followKeys(config.storage.archive, keysPath(config.dataDir), KEYS_POLL_MS, warn);
      stopRefresh = () => {
        clearInterval(timer);
        stopKeys();
        mount.close();
      };
    }
    const { startApi } = await import('../api/server.js');
    const liveFrom = opts.liveFrom === undefined ? undefined : { url: opts.liveFrom, archiveEnd: () => archiveEnd };
    const server = await startApi(config, { liveFrom });
    onShutdown(async () => {
      await server.close();
      stopRefresh();
    });
    printReady(server.url);
  });
}
