// `pmtape serve`: the API server only (read side). It reads whatever any record process writes to
// the same data dir, picks up keys created or revoked by `pmtape keys` while running, prints
// `ready <url>` once it accepts requests, and exits 0 after a clean close on SIGTERM/SIGINT.

import type { Command } from 'commander';
import { commonOptions, configFrom, onShutdown, printReady } from './common.js';

export function register(program: Command): void {
  commonOptions(
    program
      .command('serve')
      .description('API server only: serves what record processes write to the data dir')
      .option('--port <n>', 'API port (env PMTAPE_PORT, default 8080; 0 = ephemeral)')
      .option('--host <h>', 'bind address (env PMTAPE_HOST, default 127.0.0.1)'),
  ).action(async (opts: { dataDir?: string; config?: string; port?: string; host?: string }) => {
    const config = configFrom(opts);
    const { startApi } = await import('../api/server.js');
    const server = await startApi(config);
    onShutdown(() => server.close());
    printReady(server.url);
  });
}
