// Debian's chromium, driven headless by playwright-core in the page tests. It comes from apt, not the
// cache: playwright's own browser download is not used. As root with apt-get, ensure installs it
// (bounded in time); otherwise it says how to. PMTAPE_CHROMIUM points at another binary.

import { existsSync } from 'node:fs';
import { run, type Toolchain } from './toolchain.js';

function path(): string {
  return process.env.PMTAPE_CHROMIUM ?? '/usr/bin/chromium';
}

export const toolchain: Toolchain = {
  name: 'chromium',
  describe: "Debian's chromium for the page tests (PMTAPE_CHROMIUM overrides the path)",
  async ensure(log) {
    if (existsSync(path())) return;
    const hint = `Chromium not found at ${path()}: apt-get install chromium (or set PMTAPE_CHROMIUM); the page tests drive it headless`;
    if (process.env.PMTAPE_CHROMIUM !== undefined || process.getuid?.() !== 0) throw new Error(hint);
    log('toolchains: chromium: apt-get install chromium (~1-5 min) ...');
    try {
      await run('apt-get', ['update'], { timeoutMs: 300_000 });
      await run('apt-get', ['install', '-y', 'chromium'], {
        timeoutMs: 600_000,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    } catch (err) {
      throw new Error(`${hint}\n${(err as Error).message}`);
    }
    if (!existsSync(path())) throw new Error(hint);
  },
  locate() {
    return existsSync(path()) ? path() : null;
  },
};
