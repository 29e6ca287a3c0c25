// `pmtape demo`: the loopback venue emulators (`sim`) and `start` (recorders + API) wired together
// in one process, so a newcomer without network sees markets, moving books, timeseries, the stream
// and the page within seconds. Data goes to ./data/demo (never mixed with real recordings).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import type { Sim } from '../sim/server.js';
import { demoKey, keyLines, type FirstKey } from '../api/plugins/first-key.js';
import { applyConfig, commonOptions, onShutdown, printReady } from './common.js';
import { startService, type Service } from './start.js';

// The emulators are imported when the command runs, not when the CLI loads (start.ts does the same
// for recorders and API): every other command stays fast and independent of them.

export interface DemoOptions {
  readonly dataDir?: string;
  readonly port?: number;
  readonly host?: string;
  readonly seed?: number;
  readonly windowScale?: number;
  readonly faults?: string;
  readonly logLevel?: string;
}

export interface Demo {
  readonly url: string;
  readonly key: FirstKey;
  readonly sim: Sim;
  readonly config: Config;
  close(): Promise<void>;
}

/** Starts sim + service; the sim's recorder config is written beside the data for inspection. */
export async function runDemo(o: DemoOptions = {}): Promise<Demo> {
  const dataDir = resolve(o.dataDir ?? join('data', 'demo'));
  mkdirSync(dataDir, { recursive: true });
  const { startSim } = await import('../sim/server.js');
  const sim = await startSim({ port: 0, seed: o.seed ?? 1, windowScale: o.windowScale ?? 1, faults: o.faults });
  try {
    const configFile = join(dataDir, 'demo-config.json');
    writeFileSync(configFile, JSON.stringify(sim.config, null, 2) + '\n');
    const config = applyConfig(loadConfig({ dataDir, config: configFile, port: o.port, host: o.host, logLevel: o.logLevel }));
    const k = await demoKey(dataDir);
    const service: Service = await startService(config).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') throw new Error(`port ${config.port} is in use: pass --port N (0 picks a free port)`);
      throw e;
    });
    return {
      url: service.url,
      key: k,
      sim,
      config,
      async close() {
        try {
          await service.close();
        } finally {
          await sim.close();
        }
      },
    };
  } catch (e) {
    await sim.close();
    throw e;
  }
}

export function register(program: Command): void {
  commonOptions(
    program
      .command('demo')
      .description('offline demo: venue emulators on loopback + recorders + API, with a fresh key (data in ./data/demo)')
      .option('--port <n>', 'API port (env PMTAPE_PORT, default 8080; 0 = ephemeral)')
      .option('--host <h>', 'API bind address')
      .option('--seed <n>', 'emulator seed', '1')
      .option('--window-scale <x>', 'shrink 5m/15m windows, e.g. 0.1 to see markets open and resolve quickly', '1')
      .option('--faults <spec>', 'inject upstream faults, e.g. drop=30s,gap=0.01 (see `sim --help`)'),
  ).action(
    async (opts: {
      dataDir?: string;
      config?: string;
      port?: string;
      host?: string;
      seed: string;
      windowScale: string;
      faults?: string;
    }) => {
      if (opts.config)
        throw new Error(
          'demo writes its own config (pointing at the emulators); for your own config run `sim --config-out F` and `start --config F`',
        );
      const port = opts.port === undefined ? undefined : Number(opts.port);
      if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535))
        throw new Error(`--port must be 0..65535, got ${opts.port}`);
      const seed = Number(opts.seed);
      const windowScale = Number(opts.windowScale);
      if (!Number.isFinite(seed)) throw new Error(`--seed must be a number, got ${opts.seed}`);
      if (!(windowScale > 0 && windowScale <= 1)) throw new Error(`--window-scale must be in (0, 1], got ${opts.windowScale}`);
      const demo = await runDemo({ dataDir: opts.dataDir, port, host: opts.host, seed, windowScale, faults: opts.faults });
      onShutdown(() => demo.close());
      process.stdout.write(keyLines(demo.key, 'demo: a fresh key for this run (earlier demo keys are revoked)'));
      process.stdout.write(
        `  Open ${demo.url}/ in a browser and paste the key; emulators at ${demo.sim.url}; data in ${demo.config.dataDir}\n`,
      );
      printReady(demo.url);
    },
  );
}
