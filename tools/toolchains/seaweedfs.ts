// SeaweedFS's `weed`, the S3-compatible server the archive tests run against, built from the Go
// module proxy into the toolchain cache. `go install …/weed@version` refuses the module (its go.mod
// has a replace directive), so ensure() writes a throwaway module that requires SeaweedFS, repeats
// that replace, and builds the `weed` package from it. Nothing of it is committed: it lives in the cache.

import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run, stampMatches, stampOf, toolchainsDir, writeStamp, type Toolchain } from './toolchain.js';

/** The SeaweedFS pseudo-version built (a commit of its main branch the module proxy serves). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';
const GO_DIRECTIVE = '1.26.6';
const MIN_GO: [number, number] = [1, 26];

const GO_MOD = `module pmtape.local/weedbuild

go ${GO_DIRECTIVE}

require github.com/seaweedfs/seaweedfs ${SEAWEEDFS_VERSION}

// As in SeaweedFS's own go.mod: the original module path is gone from the proxy.
replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0
`;

const TOOLS_GO = `//go:build tools

package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
`;

const dir = (): string => join(toolchainsDir(), 'seaweedfs');
const stampFile = (): string => join(dir(), 'stamp');
/** The stamp of this version and recipe (a binary built elsewhere may be adopted with it). */
export const stamp = (): string => stampOf(SEAWEEDFS_VERSION, GO_MOD, TOOLS_GO);

/** `go <args>` in `cwd` (go's own -C), with a clear message when Go is not installed. */
async function go(cwd: string, args: string[]): Promise<string> {
  try {
    return await run('go', ['-C', cwd, ...args], { env: { ...process.env, GOFLAGS: '-mod=mod' } });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error(`Go not found: install Go >= ${MIN_GO.join('.')} (the suite builds SeaweedFS from source)`);
    throw e;
  }
}

async function checkGo(): Promise<void> {
  const out = await go('.', ['version']);
  const m = /go(\d+)\.(\d+)/.exec(out);
  if (!m || Number(m[1]) < MIN_GO[0] || (Number(m[1]) === MIN_GO[0] && Number(m[2]) < MIN_GO[1])) {
    throw new Error(`Go ${MIN_GO.join('.')} or newer is needed to build SeaweedFS, found "${out.trim()}"`);
  }
}

export const toolchain: Toolchain = {
  name: 'seaweedfs',
  describe: `SeaweedFS weed ${SEAWEEDFS_VERSION} (S3-compatible server for the archive tests; needs Go >= ${MIN_GO.join('.')})`,
  locate(): string | null {
    const bin = join(dir(), 'weed');
    return existsSync(bin) && stampMatches(stampFile(), stamp()) ? bin : null;
  },
  async ensure(log): Promise<void> {
    if (this.locate()) return;
    await checkGo();
    const build = join(dir(), 'build');
    await rm(build, { recursive: true, force: true });
    await mkdir(build, { recursive: true });
    await writeFile(join(build, 'go.mod'), GO_MOD);
    await writeFile(join(build, 'tools.go'), TOOLS_GO);
    log('toolchains: resolving SeaweedFS modules (go mod tidy, downloads ~400 modules the first time) ...');
    await go(build, ['mod', 'tidy']);
    log('toolchains: building weed (go build, ~5-15 min on 2 cores) ...');
    const tmp = join(dir(), 'weed.partial');
    await go(build, ['build', '-o', tmp, 'github.com/seaweedfs/seaweedfs/weed']);
    await rename(tmp, join(dir(), 'weed'));
    writeStamp(stampFile(), stamp());
    await rm(build, { recursive: true, force: true });
    log(`toolchains: weed ready at ${join(dir(), 'weed')}`);
  },
};
