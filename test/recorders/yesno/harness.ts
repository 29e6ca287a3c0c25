// Test harness for the yes/no and wallet lifecycle tests: a real `pmtape sim` server on an
// ephemeral loopback port, a real config file pointing at it, a real data dir in os.tmpdir(), and
// readers over what the recorder wrote. Everything is torn down by the caller's t.teardown.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim, type Sim } from '../../../src/sim/server.js';
import type { SimOptions } from '../../../src/sim/mount.js';
import { loadConfig, type Config } from '../../../src/config.js';
import { LogSink } from '../../../src/recorders/sink.js';
import type { RecorderDeps, RecorderError, RecorderLogger } from '../../../src/recorders/recorder.js';
import { type LogKey, openReader } from '../../../src/storage/testing.js';
import type { Recorded } from '../../../src/schema/observation.js';

export interface Harness {
  readonly sim: Sim;
  readonly config: Config;
  readonly dataDir: string;
  readonly sink: LogSink;
  readonly deps: RecorderDeps;
  readonly errors: RecorderError[];
  /** Everything logged, serialized (to check that secrets never appear). */
  readonly logText: string[];
  read(key: LogKey): Promise<Recorded[]>;
  close(): Promise<void>;
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const av = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && av && typeof av === 'object' && !Array.isArray(av)
        ? deepMerge(av as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

export async function harness(
  simOpts: SimOptions,
  configOverrides: Record<string, unknown> = {},
  dataDir?: string,
  sim?: Sim,
): Promise<Harness> {
  const s = sim ?? (await startSim({ seed: 7, ...simOpts }));
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'pmtape-rec2-'));
  const file = join(dir, `config-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(deepMerge(s.config, configOverrides)));
  const config = loadConfig({ config: file, dataDir: join(dir, 'data') }, {});
  const logText: string[] = [];
  const log = (o: object | string, m?: string): void => void logText.push(JSON.stringify(o) + (m ?? ''));
  const logger: RecorderLogger = { debug: log, info: log, warn: log, error: log };
  const errors: RecorderError[] = [];
  const sink = new LogSink(config.dataDir, { monotonic: true, writer: { fsyncIntervalMs: 5 } });
  const deps: RecorderDeps = { config, logger, sink, inShard: () => true, shared: new Map(), onError: (_k, e) => void errors.push(e) };
  return {
    sim: s,
    config,
    dataDir: dir,
    sink,
    deps,
    errors,
    logText,
    async read(key) {
      await sink.settle();
      const out: Recorded[] = [];
      for await (const it of openReader(config.dataDir, key).read('start')) out.push(it.rec);
      return out;
    },
    async close() {
      await sink.close();
      if (!sim) await s.close();
      if (!dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `cond` every 50 ms until true or `ms` passed; returns the last value. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The emulator's clock set mid-way through a 15-minute window from now on, so no market opens or
 * closes while a test runs, however slowly a busy machine runs it (7.5 minutes of margin). On the
 * wall clock, a run that crossed a quarter hour saw the next window's market listed 'initialized'
 * and the closing one polled only briefly (a stressed run did, at 05:00 UTC).
 */
export function midWindow(): () => number {
  const W = 15 * 60_000,
    base = Date.now(),
    mid = Math.floor(base / W) * W + W / 2;
  return () => mid + (Date.now() - base);
}
