// `pmtape verify` for Parquet: every partition's files against its manifest (bytes, sha256, footer
// row count and schema version: 1 and 2 are both accepted while `compact` migrates a tree), its
// quarantine file (records set aside) too, and no data file the manifest does not list. Leftover
// staging files are removed on --repair; a mismatch is reported with the command that rebuilds it.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { listPartitions, manifestVersion, readManifest, readdirOrEmpty, removeStaging, MANIFEST } from './manifest.js';
import { SCHEMA_VERSION } from './datasets.js';
import type { FileCheck } from '../types.js';
import { isDurableTemp } from '../durable.js';

export async function checkPartitions(
  dataDir: string,
  repair: boolean,
  onProgress: (label: string, done: number, total: number) => void = () => undefined,
): Promise<FileCheck[]> {
  const parts = await listPartitions(dataDir);
  const out: FileCheck[] = [];
  let done = 0;
  for (const p of parts) {
    const fix = `run \`pmtape compact --date ${p.date}\` while the day's logs exist`;
    const names = await readdirOrEmpty(p.dir);
    const m = await readManifest(p.dir);
    const dataFiles = names.filter((n) => n.endsWith('.parquet') && !n.startsWith('_'));
    if (repair && names.some((n) => n.startsWith('_staging-') || n.startsWith('_tmp-') || isDurableTemp(n))) await removeStaging(p.dir);
    if (!m) {
      if (dataFiles.length)
        out.push({
          file: join(p.dir, MANIFEST),
          ok: false,
          problem: `missing: data file(s) without a manifest (an interrupted compaction); ${fix}`,
        });
    } else {
      for (const f of m.files) {
        const path = join(p.dir, f.file);
        let problem: string | undefined;
        try {
          const bytes = await readFile(path);
          if (bytes.length !== f.bytes) problem = `${bytes.length} bytes, manifest says ${f.bytes}`;
          else if (createHash('sha256').update(bytes).digest('hex') !== f.sha256) problem = 'sha256 differs from the manifest';
          else {
            const { ParquetFileReader } = await import('./file.js');
            const r = await ParquetFileReader.open(path);
            const version = Number(r.footer.metadata.get('pmtape.schema_version') ?? 1);
            if (r.footer.rows !== f.rows) problem = `footer has ${r.footer.rows} rows, manifest says ${f.rows}`;
            else if (version !== f.schema_version) problem = `footer says schema version ${version}, manifest says ${f.schema_version}`;
            else if (version < 1 || version > SCHEMA_VERSION)
              problem = `schema version ${version} is not one this pmtape reads (1 to ${SCHEMA_VERSION})`;
            else if (version !== manifestVersion(m))
              problem = `schema version ${version} differs from the partition's ${manifestVersion(m)}`;
            else if (f.markets && !sameMarkets(f.markets, r.footer.metadata.get('pmtape.segments'))) {
              problem = 'the manifest lists other markets than the footer holds (readers would miss rows)';
            }
            r.close();
          }
        } catch (e) {
          problem = `unreadable: ${(e as Error).message}`;
        }
        out.push(problem ? { file: path, ok: false, problem: `${problem}; ${fix}` } : { file: path, ok: true });
      }
      const q = m.quarantine;
      if (q?.file) {
        // The records set aside are kept nowhere else once retention deletes the logs of other markets.
        const path = join(p.dir, q.file);
        const bytes = await readFile(path).catch(() => null);
        const problem = !bytes
          ? 'missing: the manifest lists records set aside in it'
          : bytes.length !== q.bytes
            ? `${bytes.length} bytes, manifest says ${q.bytes}`
            : createHash('sha256').update(bytes).digest('hex') !== q.sha256
              ? 'sha256 differs from the manifest'
              : undefined;
        out.push(problem ? { file: path, ok: false, problem: `${problem}; ${fix}` } : { file: path, ok: true });
      }
      for (const n of dataFiles) {
        if (!m.files.some((f) => f.file === n))
          out.push({ file: join(p.dir, n), ok: false, problem: `not listed in the manifest; ${fix}` });
      }
    }
    onProgress('verify partitions', ++done, parts.length);
  }
  return out;
}

/** Whether a manifest's market list names exactly the markets of a footer's segment index. */
function sameMarkets(listed: readonly string[], segmentsJson: string | undefined): boolean {
  const inFooter = new Set((JSON.parse(segmentsJson ?? '[]') as { market: string }[]).map((s) => s.market));
  return listed.length === inFooter.size && listed.every((m) => inFooter.has(m));
}
