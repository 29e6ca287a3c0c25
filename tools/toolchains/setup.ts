// `npm test` runs this after the build and before tap: every registered toolchain is ensured in turn
// (idempotent: a stamp per install). A failure exits non-zero under CI; elsewhere it warns and goes
// on, and the tests that need the tool skip with the same message (they fail under CI).
// `node dist/tools/toolchains/setup.js [name...]` ensures only the named ones.

import { pathToFileURL } from 'node:url';
import { underCi, type Toolchain } from './toolchain.js';
import { hftbacktest, nautilus, toolchain as python } from './python.js';
import { toolchain as chromium } from './chromium.js';
import { toolchain as seaweedfs } from './seaweedfs.js';
import { toolchain as spark } from './spark.js';

/** Every toolchain the full suite needs, in the order they are ensured. */
export const toolchains: readonly Toolchain[] = [python, chromium, seaweedfs, spark, nautilus, hftbacktest];

export function findToolchain(name: string): Toolchain | undefined {
  return toolchains.find((tc) => tc.name === name);
}

export async function setup(names: string[] = []): Promise<number> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const unknown = names.filter((n) => !findToolchain(n));
  if (unknown.length) {
    log(`toolchains: unknown ${unknown.join(', ')}; known: ${toolchains.map((tc) => tc.name).join(', ')}`);
    return 2;
  }
  let failed = 0;
  for (const tc of toolchains.filter((tc) => names.length === 0 || names.includes(tc.name))) {
    try {
      await tc.ensure(log);
    } catch (err) {
      failed++;
      log(`toolchains: ${tc.name} unavailable (${tc.describe}): ${(err as Error).message}`);
    }
  }
  if (failed === 0) return 0;
  if (underCi()) {
    log(`toolchains: ${failed} toolchain(s) missing under CI: failing (the tests that need them would fail too)`);
    return 1;
  }
  log(`toolchains: warning: ${failed} toolchain(s) missing; the tests that need them will be skipped (CI fails instead)`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await setup(process.argv.slice(2));
}
