// `pmtape record [--config F] [--kinds a,b]`: the recorders only (write side). Prints `ready <data
// dir URL>` once every recorder started; SIGTERM/SIGINT flush, fsync, close and exit 0. Safe to
// kill -9 at any time: acknowledged records are fsynced, and the restart writes the downtime gap.

import type { Command } from 'commander';
import { pathToFileURL } from 'node:url';
import { commonOptions, configFrom, onShutdown, printReady } from './common.js';

export function register(program: Command): void {
  commonOptions(program.command('record'))
    .description('run the recorders only (write side); safe to kill -9')
    .option('--kinds <list>', 'comma-separated recorder kinds to run (default: all enabled in the config)')
    .action(async (opts: { dataDir?: string; config?: string; kinds?: string }) => {
      const config = configFrom(opts);
      const { default: pino } = await import('pino');
      const { startRecorders } = await import('../recorders/host.js');
      const logger = pino({ level: config.logLevel }, pino.destination(1));
      const kinds = opts.kinds
        ? opts.kinds
            .split(',')
            .map((k) => k.trim())
            .filter(Boolean)
        : undefined;
      const host = await startRecorders(config, { logger, kinds });
      onShutdown(() => host.stop());
      printReady(pathToFileURL(config.dataDir).href);
    });
}
