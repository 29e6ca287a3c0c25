// Shared by the recorder tests: a sim-pointed config in a temp dir, reading whole logs back, and
// the invariants every recorded books log must satisfy (checked independently of the recorder).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.js';
import { listMarkets, openReader } from '../../src/storage/index.js';
import type { Family, Recorded, StreamName } from '../../src/schema/observation.js';
import { MarketBooks } from '../../src/book/book-state.js';

const madeDirs: string[] = [];
process.on('exit', () => {
  // Each test file is its own process, so its temp dirs go when it exits (CI machines ran up 1.6 GB
  // of them in /tmp in a day). PMTAPE_KEEP_TEST_DIRS=1 keeps them to look at after a failure.
  if (process.env.PMTAPE_KEEP_TEST_DIRS === '1') return;
  for (const dir of madeDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // A child that outlived the test may still write into it; a leftover dir is not a failure.
    }
  }
});

/** A temp dir removed when the test process exits (see above). */
export function tempDir(prefix = 'pmtape-rec-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

/** Writes `sim.config` (plus overrides) to a file and loads it like `--config` would. */
export function simConfig(
  simCfg: Record<string, unknown>,
  dataDir: string,
  over: Record<string, unknown> = {},
): { config: Config; file: string } {
  const merged: Record<string, unknown> = { ...simCfg, ...over, recorders: { ...(simCfg.recorders as object), ...(over.recorders ?? {}) } };
  const file = join(dataDir, 'recorder-config.json');
  writeFileSync(file, JSON.stringify(merged));
  return { config: loadConfig({ config: file, dataDir }, {}), file };
}

export async function readLog(dataDir: string, family: Family, stream: StreamName, market: string): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for await (const it of openReader(dataDir, { family, stream, market }).read('start')) out.push(it.rec);
  return out;
}

export async function readAll(dataDir: string, stream: StreamName, family: Family = 'coin'): Promise<Map<string, Recorded[]>> {
  const out = new Map<string, Recorded[]>();
  for (const m of await listMarkets(dataDir, family, stream)) out.set(m, await readLog(dataDir, family, stream, m));
  return out;
}

const numLadder = (l: readonly (readonly [string, string])[]): string => JSON.stringify(l.map(([p, s]) => [Number(p), Number(s)]));

/**
 * Invariants of one books log, returned as a list of violations (empty = good):
 * seq strictly increasing and recv_ts non-decreasing; no delta recorded for a token without a
 * valid book; every snapshot that disagrees with the replayed book is immediately followed by a
 * closed `sequence_gap` covering it; every closed gap has start ≤ end.
 */
export function violations(recs: readonly Recorded[]): string[] {
  const out: string[] = [];
  const books = new MarketBooks();
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i];
    if (i > 0 && r.seq <= recs[i - 1].seq) out.push(`seq not increasing at ${i}`);
    if (i > 0 && r.recv_ts < recs[i - 1].recv_ts) out.push(`recv_ts going back at ${i}`);
    if (r.type === 'book_delta' && !books.isValid(r.token_id))
      out.push(`delta for ${r.token_id.slice(0, 6)} without a valid book at seq ${r.seq}`);
    if (r.type === 'book') {
      const before = books.view(r.token_id);
      if (before && (numLadder(before.bids) !== numLadder(r.bids) || numLadder(before.asks) !== numLadder(r.asks))) {
        const next = recs.slice(i + 1, i + 4).find((x) => x.type === 'gap' && x.reason === 'sequence_gap' && x.end_ts !== null);
        if (!next) out.push(`silent divergence before book seq ${r.seq}`);
      }
    }
    if (r.type === 'gap' && r.end_ts !== null && r.end_ts < r.start_ts) out.push(`gap seq ${r.seq} ends before it starts`);
    books.apply(r);
  }
  return out;
}

export const gapsOf = (recs: readonly Recorded[]) => recs.filter((r): r is Extract<Recorded, { type: 'gap' }> => r.type === 'gap');

export function waitFor(pred: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    // A predicate that throws rejects the wait (it once became an unhandled rejection from a timer).
    const tick = async (): Promise<void> => {
      if (await pred()) return resolve(true);
      if (Date.now() > until) return resolve(false);
      setTimeout(() => void tick().catch(reject), stepMs);
    };
    tick().catch(reject);
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
