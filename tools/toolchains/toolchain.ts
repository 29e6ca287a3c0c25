// The shape every external toolchain module under tools/toolchains/ exports (see docs/testing.md):
// `ensure` installs it into the git-ignored cache once, `locate` finds it without installing.

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Toolchain {
  readonly name: string;
  readonly describe: string;
  /** Installs the toolchain when missing or stale; idempotent; one stderr line per step via `log`. */
  ensure(log: (line: string) => void): Promise<void>;
  /** The tool's path when it is installed and current, else null (never installs). */
  locate(): string | null;
}

/** The repository root: the nearest folder above this file holding package.json (src or dist). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('toolchains: cannot find the repository root (no package.json above tools/toolchains)');
    dir = up;
  }
  return dir;
}

/** The cache folder: env PMTAPE_TOOLCHAINS_DIR, else `.toolchains/` at the repository root. */
export function toolchainsDir(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.PMTAPE_TOOLCHAINS_DIR;
  return v && v.trim() !== '' ? resolve(v) : join(repoRoot(), '.toolchains');
}
