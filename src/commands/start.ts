// `pmtape start` (`npm start`): recorders and the API in one process, the default main job. On the
// first start with no API keys one paid key is created and printed. SIGTERM/SIGINT: the API stops
// accepting, then recorders flush, fsync and close; exit 0.

import type { Command } from 'commander';
import type { Config } from '../config.js';
import { commonOptions, configFrom, onShutdown, printReady } from './common.js';

export interface Service {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Recorders + API over one data dir (shared by `start` and `demo`). The API listens first and the
 * recorders start behind it: an unreachable upstream (offline, firewalled) must never delay the
 * read side, which serves whatever is already on disk and shows the outage as gaps.
 */
export async function startService(config: Config): Promise<Service> {
  const { default: pino } = await import('pino');
  const { startRecorders } = await import('../recorders/host.js');
  const { startApi } = await import('../api/server.js');
  // pino JSON lines on stdout, beside the first-key lines and `ready <url>` (see serverLogger in
  // src/api/app.ts), buffered as `serve`'s are: the request log writes a line per request.
  const { bufferedStdout } = await import('../api/plugins/request-log.js');
  const logger = pino({ level: config.logLevel }, bufferedStdout());
  // The read side warms in the background (server.ts): recording must not wait for it.
  const api = await startApi(config, { logger: logger.child({ part: 'api' }), warmUp: 'background' });
  const recorders = startRecorders(config, { logger: logger.child({ part: 'recorders' }) }).catch((e: unknown) => {
    // A recorder that cannot start (e.g. its markets are locked by another process) is logged;
    // the API keeps serving what is recorded.
    logger.error({ err: (e as Error).message }, 'recorders did not start');
    return null;
  });
  const { startAutoCompaction } = await import('../storage/index.js');
  const { compactionFailures, compactionQuarantined } = await import('../metrics.js');
  const compaction = startAutoCompaction(config, logger.child({ part: 'compaction' }), undefined, (m) => {
    if (m.type === 'partitions') {
      for (const p of m.quarantined) compactionQuarantined.inc({ family: p.family, dataset: p.dataset }, p.quarantined ?? 0);
      for (const p of m.failed) compactionFailures.inc({ family: p.family, dataset: p.dataset });
    } else if (m.type === 'day-failed') compactionFailures.inc({ family: '*', dataset: '*' });
  });
  return {
    url: api.url,
    async close() {
      try {
        await compaction.stop();
        await api.close();
      } finally {
        await (await recorders)?.stop();
      }
    },
  };
}

export function register(program: Command): void {
  commonOptions(
    program
      .command('start')
      .description('recorders + API server in one process (the default main job)')
      .option('--port <n>', 'API port (env PMTAPE_PORT, default 8080; 0 = ephemeral)')
      .option('--host <h>', 'bind address (env PMTAPE_HOST, default 127.0.0.1)'),
  ).action(async (opts: { dataDir?: string; config?: string; port?: string; host?: string }) => {
    const config = configFrom(opts);
    const { announceFirstKey } = await import('../api/plugins/first-key.js');
    await announceFirstKey(config.dataDir);
    const service = await startService(config);
    onShutdown(() => service.close());
    printReady(service.url);
  });
}
