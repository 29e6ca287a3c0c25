// `npm run bench -- archive`: publishing a compacted day to a real SeaweedFS (the seaweedfs
// toolchain) with `archive sync`'s code (each file read once, checked and proven; each partition's
// manifest after its files, the day record last) vs a plain lib-storage upload of the same files,
// same part size and concurrency, to the same server, alternating in each round. Target: ≥ 0.8×
// the plain throughput. PMTAPE_BENCH_ARCHIVE_PUBLISH_ONLY=1 stops there (no storm, no page).
// Then issue 36's snapshots-page targets on the published day (archive-page.ts): a 1-hour page from
// a stateless reader on the bucket vs from the host's local compacted day, cold and warm.

import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Upload } from '@aws-sdk/lib-storage';
import type { Test } from 'tap';
import { DAY_MS, utcDay } from '../../src/schema/time.js';
import { compactDay, listPartitions, readManifest, PART_SIZE, syncArchive } from '../../src/storage/testing.js';
import { parseArchiveUrl } from '../../src/config.js';
import { writeFixture } from '../fixtures/compaction-logs.js';
import { startWeed, testClient, ACCESS_KEY, SECRET_KEY } from '../fixtures/weed.js';
import { startFaultProxy } from '../fixtures/fault-proxy.js';
import { toolchain as seaweedfs } from '../toolchains/seaweedfs.js';
import { snapshotsPage } from './archive-page.js';

const log = (s: string): void => void process.stderr.write(`bench archive: ${s}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export async function run(): Promise<Record<string, unknown>> {
  const bin = seaweedfs.locate();
  if (!bin) throw new Error('weed is not built: run `node dist/tools/toolchains/setup.js seaweedfs` first');
  const rounds = Number(process.env.PMTAPE_BENCH_ARCHIVE_ROUNDS ?? 3);
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) } as unknown as Test;
  const dataDir = await mkdtemp(join(tmpdir(), 'pmtape-bench-archive-'));
  try {
    const day = utcDay(Date.now() - 2 * DAY_MS);
    log('writing and compacting a day ...');
    await writeFixture(dataDir, {
      days: [day],
      booksPerDay: Number(process.env.PMTAPE_BENCH_ARCHIVE_BOOKS ?? 20_000),
      coinMarkets: 4,
      levels: 60,
      bothOutcomes: true,
      spanMs: 6 * 3_600_000,
    });
    await compactDay(dataDir, day, { threads: 2 });
    const files: { path: string; rel: string; bytes: number }[] = [];
    for (const p of await listPartitions(dataDir)) {
      const m = await readManifest(p.dir);
      for (const f of m?.files ?? [])
        files.push({
          path: join(p.dir, f.file),
          rel: `parquet/family=${p.family}/dataset=${p.dataset}/date=${p.date}/${f.file}`,
          bytes: f.bytes,
        });
    }
    const bytes = files.reduce((n, f) => n + f.bytes, 0);
    log(`${files.length} data files, ${(bytes / 1e6).toFixed(1)} MB; starting weed ...`);
    const weed = await startWeed(t, bin);
    await weed.createBucket('bench');
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
    const s3 = testClient(weed.endpoint);
    teardowns.push(() => s3.destroy());

    // This process's CPU per side (user + system ms): what the load around the bench moves least.
    const cpu: Record<'plain' | 'publish', number[]> = { plain: [], publish: [] };
    const plain = async (prefix: string): Promise<number> => {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < files.length) {
          const f = files[next++];
          await new Upload({
            client: s3,
            params: { Bucket: 'bench', Key: `${prefix}/${f.rel}`, Body: createReadStream(f.path) },
            partSize: PART_SIZE,
            queueSize: 4,
          }).done();
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
      const c = process.cpuUsage(c0);
      cpu.plain.push((c.user + c.system) / 1000);
      return performance.now() - t0;
    };
    // Each step's share of a publication (ms from the end of the step before): where the time goes.
    const phases: Record<string, number[]> = {};
    const publish = async (prefix: string, endpoint = weed.endpoint): Promise<number> => {
      const url = `s3://bench/${prefix}`;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      let last = t0;
      const r = await syncArchive(
        dataDir,
        { url, ...parseArchiveUrl(url, 'bench'), endpoint, region: 'us-east-1', pathStyle: true, maxLagDays: 2 },
        {
          days: [day],
          onPhase: (p) => {
            const now = performance.now();
            (phases[p] ??= []).push(now - last);
            last = now;
          },
        },
      );
      if (r.failed || r.uploaded === 0) throw new Error(`publish failed: ${JSON.stringify(r)}`);
      const c = process.cpuUsage(c0);
      cpu.publish.push((c.user + c.system) / 1000);
      return performance.now() - t0;
    };
    const pageOnly = process.env.PMTAPE_BENCH_ARCHIVE_PAGE_ONLY === '1';
    if (pageOnly) await publish('pub-0');
    const ratios: number[] = [];
    const plainMs: number[] = [];
    const publishMs: number[] = [];
    for (let i = 0; i < (pageOnly ? 0 : rounds); i++) {
      // Alternating which goes first, so neither always meets a warmer server or page cache.
      const order = i % 2 === 0 ? (['plain', 'publish'] as const) : (['publish', 'plain'] as const);
      const ms: Record<string, number> = {};
      for (const which of order) ms[which] = which === 'plain' ? await plain(`plain-${i}`) : await publish(`pub-${i}`);
      plainMs.push(ms.plain);
      publishMs.push(ms.publish);
      ratios.push(ms.plain / ms.publish);
      log(
        `round ${i + 1}/${rounds}: plain ${ms.plain.toFixed(0)} ms, publish ${ms.publish.toFixed(0)} ms, ratio ${(ms.plain / ms.publish).toFixed(2)}`,
      );
    }
    const publication = {
      files: files.length,
      bytes,
      rounds,
      plain_mb_s: round(bytes / 1e3 / median(plainMs)),
      publish_mb_s: round(bytes / 1e3 / median(publishMs)),
      publish_vs_plain_throughput: round(median(ratios)),
      ratios: ratios.map((r) => round(r)),
      plain_ms: plainMs.map((x) => Math.round(x)),
      publish_ms: publishMs.map((x) => Math.round(x)),
      plain_cpu_ms_median: Math.round(median(cpu.plain)),
      publish_cpu_ms_median: Math.round(median(cpu.publish)),
      publish_phase_median_ms: Object.fromEntries(Object.entries(phases).map(([p, xs]) => [p, round(median(xs), 1)])),
      publish_phase_ms: Object.fromEntries(Object.entries(phases).map(([p, xs]) => [p, xs.map((x) => Math.round(x))])),
      // What each side does per file, so the ratio is read for what it is.
      sides: {
        plain:
          'one S3Client made once for every round (sockets kept warm), no flexible checksums (WHEN_REQUIRED), lib-storage Upload of a file stream: 8 MiB parts, 4 parts and 4 files at once; the SDK hashes each PUT body (sha256, the signed payload hash); no check of what was stored',
        publish:
          'syncArchive as `pmtape archive sync` runs it: a new client per run, the day planned (manifests read, sizes checked), the day record read and a payload-check probe beside it; each file read whole, sha256 checked against its manifest and sent as the signed payload hash (SeaweedFS checks it: no MD5), 4 files at once, biggest first; each manifest after its files, the day record last, archive-state written durably',
      },
      target: '≥ 0.8',
    };
    if (process.env.PMTAPE_BENCH_ARCHIVE_PUBLISH_ONLY === '1') return publication;
    // The same publication through the fault proxy breaking 30 % of requests (503 SlowDown, resets,
    // cut bodies and uploads), with the default retry policy; then every data file is read back
    // directly and compared with the local one.
    // The page reads the day last published (retention checks the host's last publication, then
    // retires its logs, so the local side serves the compacted day).
    const last = `s3://bench/pub-${pageOnly ? 0 : rounds - 1}`;
    const snapshots_page = await snapshotsPage(dataDir, day, weed.endpoint, last, 'w-1', rounds);
    if (pageOnly) return { snapshots_page };
    const proxy = await startFaultProxy(weed.endpoint, 0.3);
    teardowns.push(() => proxy.close());
    const stormMs = await publish('storm', proxy.url);
    const faults = Object.values(proxy.stats.faults).reduce((n, x) => n + x, 0);
    let exact = true;
    for (const f of files) {
      const r = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: `storm/${f.rel}` }));
      if (!Buffer.from(await r.Body!.transformToByteArray()).equals(await readFile(f.path))) exact = false;
    }
    log(
      `storm: published in ${stormMs.toFixed(0)} ms through ${proxy.stats.requests} requests, ${faults} broken; read back ${exact ? 'exactly' : 'WITH DIFFERENCES'}`,
    );
    if (!exact) throw new Error('the day published through the storm does not read back exactly');
    return {
      storm_publish_ms: Math.round(stormMs),
      storm_requests: proxy.stats.requests,
      storm_faults: faults,
      storm_read_back_exact: exact,
      storm_vs_plain_time: round(stormMs / median(plainMs)),
      ...publication,
      snapshots_page,
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await rm(dataDir, { recursive: true, force: true });
  }
}
