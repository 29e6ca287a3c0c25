// Virtual environments made from the machine's python3, so the Python parts of the suite run the
// same everywhere: `pandas` WITH pandas and pyarrow (pinned; later work adds polars and pyspark here)
// and `bare` WITHOUT pandas, because clients/python promises to work in both and each branch of it
// runs only where its packages are (or are not) installed; `tardis` holds the tardis-dev Python client.
// The `python` toolchain ensures those three;
// locate() gives the folder holding them, pythonIn(folder, venv) the interpreter of one.
// The backtesting engines get a venv each, as their own toolchains (`nautilus`, `hftbacktest`):
// hftbacktest pins numpy < 2.3 and the engines are large (~1.5 GB together), so a machine without them
// still runs every other Python test; their locate() gives the venv's interpreter.

import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { run, stampMatches, stampOf, toolchainsDir, writeStamp, type Toolchain } from './toolchain.js';

/** The system interpreter the venvs are made from. */
const PYTHON = 'python3';
const MIN = [3, 11] as const;

/** Pinned requirements per venv: versions pip offers for Python 3.11 (wheels, no compiler needed). */
export const VENVS = {
  pandas: ['numpy==2.3.5', 'pandas==2.3.3', 'pyarrow==21.0.0'],
  bare: [] as string[],
  /** The tardis-dev Python client, unchanged: it downloads a day's Tardis-format files from `serve` (issue 38). */
  tardis: ['tardis-dev==5.0.4'],
  // NautilusTrader (Tardis CSV loader, BacktestEngine); numpy/pandas/pyarrow as in `pandas` (its pins allow them).
  nautilus: ['nautilus-trader==1.221.0', 'numpy==2.3.5', 'pandas==2.3.3', 'pyarrow==21.0.0'],
  // hftbacktest (tardis.convert reads with polars, its backtest JIT-compiles with numba); it requires numpy < 2.3.
  hftbacktest: ['hftbacktest==2.4.4', 'numpy==2.2.6', 'numba==0.62.1', 'polars==1.35.2'],
} as const;
export type Venv = keyof typeof VENVS;

/** What an engine venv's install costs, said in its progress line (the others take ~1-3 min). */
const ENGINE_SIZES: Partial<Record<Venv, string>> = { nautilus: '~650 MB, ~2-6 min', hftbacktest: '~850 MB, ~2-6 min' };

function root(): string {
  return join(toolchainsDir(), 'python');
}

/** The interpreter of one venv under the folder locate() returned. */
export function pythonIn(folder: string, venv: Venv): string {
  return join(folder, venv, 'bin', 'python');
}

function stampFile(venv: Venv): string {
  return join(root(), venv, '.pmtape-stamp');
}

async function systemVersion(): Promise<string> {
  let out: string;
  try {
    out = await run(PYTHON, ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'], { timeoutMs: 60_000 });
  } catch {
    throw new Error(
      `${PYTHON} not found: install Python >= ${MIN.join('.')} with venv and pip (Debian: apt-get install python3 python3-venv python3-pip); the suite runs the Python client in venvs made from it`,
    );
  }
  const version = out.trim();
  const [major, minor] = version.split('.').map(Number);
  if (major < MIN[0] || (major === MIN[0] && minor < MIN[1]))
    throw new Error(`${PYTHON} is ${version}: install Python >= ${MIN.join('.')} (the pinned pandas and pyarrow need it)`);
  return version;
}

async function ensureVenv(venv: Venv, version: string, log: (line: string) => void): Promise<void> {
  const dir = join(root(), venv);
  const stamp = stampOf(version, ...VENVS[venv]);
  if (stampMatches(stampFile(venv), stamp) && existsSync(pythonIn(root(), venv))) return;
  // A stale or half-made venv (no stamp: an install was interrupted) is made again from scratch.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root(), { recursive: true });
  const name = venv in ENGINE_SIZES ? venv : 'python';
  log(`toolchains: ${name}: making venv ${venv} from ${PYTHON} ${version} ...`);
  try {
    await run(PYTHON, ['-m', 'venv', dir], { timeoutMs: 300_000 });
  } catch (err) {
    throw new Error(`${PYTHON} -m venv failed: install the venv module (Debian: apt-get install python3-venv)\n${(err as Error).message}`);
  }
  if (VENVS[venv].length > 0) {
    log(`toolchains: ${name}: installing ${VENVS[venv].join(' ')} into venv ${venv} (pip, ${ENGINE_SIZES[venv] ?? '~1-3 min'}) ...`);
    try {
      await run(pythonIn(root(), venv), ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', ...VENVS[venv]], {
        timeoutMs: 1_200_000,
      });
    } catch (err) {
      throw new Error(
        `pip could not install ${VENVS[venv].join(' ')} into ${dir}: check the network to the package index, or pip's message below\n${(err as Error).message}`,
      );
    }
  }
  writeStamp(stampFile(venv), stamp);
}

/** Stamps are written last, so a present stamp means a complete venv; its content was checked by ensure. */
function ready(venv: Venv): boolean {
  return existsSync(stampFile(venv)) && existsSync(pythonIn(root(), venv));
}

/** The venvs the `python` toolchain ensures (the engines' are toolchains of their own, below). */
const CLIENT_VENVS: readonly Venv[] = ['pandas', 'bare', 'tardis'];

export const toolchain: Toolchain = {
  name: 'python',
  describe: `venvs from ${PYTHON} (>= ${MIN.join('.')}): "pandas" with ${VENVS.pandas.join(', ')}; "bare" without pandas; "tardis" with ${VENVS.tardis.join(', ')}`,
  async ensure(log) {
    const version = await systemVersion();
    for (const venv of CLIENT_VENVS) await ensureVenv(venv, version, log);
  },
  locate() {
    return CLIENT_VENVS.every(ready) ? root() : null;
  },
};

/** A backtesting engine's venv as a toolchain of its own: locate() gives the venv's python interpreter. */
function engineToolchain(venv: 'nautilus' | 'hftbacktest', what: string): Toolchain {
  return {
    name: venv,
    describe: `${what}: venv "${venv}" from ${PYTHON} (>= ${MIN.join('.')}) with ${VENVS[venv].join(', ')}`,
    async ensure(log) {
      await ensureVenv(venv, await systemVersion(), log);
    },
    locate() {
      return ready(venv) ? pythonIn(root(), venv) : null;
    },
  };
}

export const nautilus = engineToolchain('nautilus', 'NautilusTrader, the backtests over exported Tardis-format files');
export const hftbacktest = engineToolchain('hftbacktest', 'hftbacktest, the queue-model backtests over exported Tardis-format files');
