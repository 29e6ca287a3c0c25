// `pmtape sim`: the offline venue emulators for every kind on loopback (src/sim/server.ts).
// `--config-out F` writes a recorder config pointing at them; prints `ready <url>`.

import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { onShutdown, printReady } from './common.js';

function number(name: string, v: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${name} must be a number in [${min}, ${max}], got "${v}"`);
  return n;
}

export function register(program: Command): void {
  program
    .command('sim')
    .description('offline venue emulators (clob, catalog, yesno, wallet) on loopback')
    .option('--port <port>', 'port (0 = ephemeral)', '0')
    .option('--host <host>', 'bind address', '127.0.0.1')
    .option('--config-out <file>', 'write a recorder config pointing at the emulators')
    .option('--seed <n>', 'random seed (same seed, same run)', '1')
    .option('--faults <spec>', 'e.g. drop=4s,garbage=0.02,gap=0.01,stall=0.01,http429=0.05,http5xx=0.02')
    .option('--window-scale <x>', 'shrink 5m/15m windows (0.02 = fifty-fold)', '1')
    .option('--rate <n>', 'generated clob book changes per second over all markets', '100')
    .option('--replay <file>', 'serve a captured clob message file instead of generated books')
    .option('--replay-speed <x>', 'replay pace: 1 = as recorded, 10 = ten times faster, 0 = at once', '1')
    .option('--data-dir <dir>', 'accepted for symmetry; the sim stores nothing')
    .action(async (o: Record<string, string | undefined>) => {
      const { startSim } = await import('../sim/server.js');
      const sim = await startSim({
        port: number('port', o.port, 0, 65535),
        host: o.host,
        seed: number('seed', o.seed, 0),
        faults: o.faults,
        windowScale: number('window-scale', o.windowScale, 0.0001, 1),
        rate: number('rate', o.rate, 0, 1_000_000),
        replay: o.replay,
        replaySpeed: number('replay-speed', o.replaySpeed, 0),
      });
      if (o.configOut) writeFileSync(o.configOut, `${JSON.stringify(sim.config, null, 2)}\n`);
      onShutdown(() => sim.close());
      printReady(sim.url);
    });
}
