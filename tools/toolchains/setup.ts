// `npm test` runs this after the build: ensures every registered toolchain in turn. A failure is
// fatal under CI (env CI set and not "false"/"0"); elsewhere a warning, and the tests that need the
// tool say they were skipped and why.

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { toolchain as seaweedfs } from './seaweedfs.js';
import { toolchain as spark } from './spark.js';
import type { Toolchain } from './toolchain.js';

export const TOOLCHAINS: readonly Toolchain[] = [seaweedfs, spark];

export const underCI = (env: NodeJS.ProcessEnv = process.env): boolean =>
  env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';

async function main(): Promise<void> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  let failed = false;
  for (const tc of TOOLCHAINS) {
    try {
      await tc.ensure(log);
    } catch (e) {
      failed = true;
      log(`${underCI() ? 'error' : 'warning'}: ${tc.name}: ${(e as Error).message}`);
    }
  }
  if (failed && underCI()) process.exit(1);
}

if (process.argv[1] && pathToFileURL(resolve(process.argv[1])).href === import.meta.url) await main();
