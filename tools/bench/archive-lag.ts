// `npm run bench -- archive-lag`: the archive lag (`/healthz`, `/metrics`, `archive sync`'s pending
// days; src/storage/archive/lag.ts) over a long history: a data dir with a year of compacted days
// (a manifest in every family's every dataset folder, half the days recorded as published), timed
// against the least any answer from local files needs: one walk of the Parquet tree reading every
// manifest once. The lag used to walk the whole tree again for every day (quadratic in the history).

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAMILIES } from '../../src/schema/observation.js';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { archiveLag, DATASET_FOLDERS, listPartitions, readManifest, writePublished } from '../../src/storage/testing.js';
import { parseArchiveUrl } from '../../src/config.js';

const log = (s: string): void => void process.stderr.write(`bench archive-lag: ${s}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export async function run(): Promise<Record<string, unknown>> {
  const days = Number(process.env.PMTAPE_BENCH_LAG_DAYS ?? 365);
  const rounds = Number(process.env.PMTAPE_BENCH_LAG_ROUNDS ?? 5);
  const dataDir = await mkdtemp(join(tmpdir(), 'pmtape-bench-lag-'));
  const url = 's3://bench/lag';
  const archive = { url, ...parseArchiveUrl(url, 'bench'), endpoint: null, region: 'us-east-1', pathStyle: false, maxLagDays: 2 };
  try {
    let partitions = 0;
    for (let d = 0; d < days; d++) {
      const day = utcDay(Date.UTC(2025, 0, 1) + d * DAY_MS);
      const shas: Record<string, string> = {};
      for (const family of FAMILIES)
        for (const dataset of DATASET_FOLDERS) {
          const rel = `family=${family}/dataset=${dataset}/date=${day}`;
          const dir = join(dataDir, 'parquet', rel);
          await mkdir(dir, { recursive: true });
          const body = JSON.stringify({
            family,
            dataset,
            date: day,
            files: [{ file: 'x.parquet', bytes: 1000, sha256: '0' }],
            sources: {},
            created: day,
          });
          await writeFile(join(dir, '_manifest.json'), body);
          shas[rel] = createHash('sha256').update(body).digest('hex');
          partitions++;
        }
      if (d % 2 === 0) await writePublished(dataDir, { url, date: day, manifests: shas });
    }
    log(`${days} days, ${partitions} partitions`);
    const lagMs: number[] = [];
    const walkMs: number[] = [];
    let lag = null;
    for (let i = 0; i < rounds; i++) {
      // Alternating which goes first, so neither always meets the warmer page cache.
      for (const which of i % 2 === 0 ? ['lag', 'walk'] : ['walk', 'lag']) {
        const t0 = performance.now();
        if (which === 'lag') lag = await archiveLag(dataDir, archive);
        else
          await Promise.all(
            (await listPartitions(dataDir)).map(async (p) => [await readManifest(p.dir), await readFile(join(p.dir, '_manifest.json'))]),
          );
        (which === 'lag' ? lagMs : walkMs).push(performance.now() - t0);
      }
      log(`round ${i + 1}/${rounds}: lag ${lagMs.at(-1)!.toFixed(0)} ms, one walk ${walkMs.at(-1)!.toFixed(0)} ms`);
    }
    if (lag?.lag_days !== Math.floor(days / 2)) throw new Error(`lag ${JSON.stringify(lag)}: expected ${Math.floor(days / 2)} days`);
    return {
      days,
      partitions,
      lag_days: lag.lag_days,
      lag_ms_median: round(median(lagMs), 1),
      walk_ms_median: round(median(walkMs), 1),
      lag_vs_walk: round(median(lagMs) / median(walkMs)),
      sides: {
        lag: "archiveLag: the compacted days, each day's manifests read and hashed, its published state read",
        walk: 'listPartitions, then every manifest read twice (parsed, then its bytes), all at once: what the lag needs at the least',
      },
    };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
