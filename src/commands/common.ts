// Helpers every command shares: the common options, the `ready <url>` line, clean shutdown on
// SIGTERM/SIGINT, and progress reporting (a bar on a TTY, plain log lines otherwise).

import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { loadConfig, type Config } from '../config.js';
import { setIndexCacheBytes } from '../storage/index.js';

/** Adds the options every command accepts. */
export function commonOptions(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'root of all recorded data (env PMTAPE_DATA_DIR, default ./data)')
    .option('--config <file>', 'JSON config file (env PMTAPE_CONFIG)');
}

/** Builds the frozen config from a command's parsed options. */
export function configFrom(opts: { dataDir?: string; config?: string; port?: string | number; host?: string }): Config {
  return applyConfig(loadConfig({ dataDir: opts.dataDir, config: opts.config, port: opts.port, host: opts.host }));
}

/** Hands the process-wide settings of `config` to the modules that keep process-wide state. */
export function applyConfig(config: Config): Config {
  setIndexCacheBytes(config.storage.indexCacheBytes);
  // Loaded only when asked for: commands that serve no /metrics (compact, keys, verify) never load
  // prom-client. Processes that do have already imported it, so this resolves within a tick.
  if (config.gcMetrics) {
    void import('../metrics.js').then(
      (m) => m.enableGcMetrics(),
      (e: unknown) => {
        process.stderr.write(`pmtape: PMTAPE_GC_METRICS=on but the metrics module failed to load: ${String(e)}\n`);
      },
    );
  }
  return config;
}

/** Long-running commands print exactly this line on stdout once they accept requests. */
export function printReady(url: string): void {
  process.stdout.write(`ready ${url}\n`);
}

/**
 * Runs `close` once on SIGTERM or SIGINT, then exits 0 (or 1 if closing failed). A second signal
 * while closing forces exit 1.
 */
export function onShutdown(close: () => Promise<void>): void {
  let closing = false;
  const handler = (): void => {
    if (closing) process.exit(1);
    closing = true;
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`pmtape: error while shutting down: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

export interface Progress {
  tick(n?: number, note?: string): void;
  done(summary?: string): void;
}

/**
 * Progress of long work (compaction, import, verify, backfill): a bar on a TTY, otherwise a plain
 * line on stderr at most every 2 s and at the end, so logs stay readable.
 */
export function progress(label: string, total: number): Progress {
  let n = 0;
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {value}/{total} {note}`, stream: process.stderr, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { note: '' });
    return {
      tick: (k = 1, note = '') => bar.increment(k, { note }),
      done: (summary) => {
        bar.stop();
        if (summary) process.stderr.write(`${label}: ${summary}\n`);
      },
    };
  }
  let last = 0;
  return {
    tick: (k = 1, note = '') => {
      n += k;
      const now = Date.now();
      if (now - last >= 2000) {
        last = now;
        process.stderr.write(`${label}: ${n}/${total}${note ? ` ${note}` : ''}\n`);
      }
    },
    done: (summary) => process.stderr.write(`${label}: ${n}/${total} done${summary ? ` — ${summary}` : ''}\n`),
  };
}
