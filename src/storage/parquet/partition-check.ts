// `pmtape verify` for Parquet: every partition's files against its manifest (bytes, sha256, footer
// row count) and no data file the manifest does not list. Leftover staging files are removed on
// --repair; a mismatch is reported with the command that rebuilds the partition.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { listPartitions, readManifest, readdirOrEmpty, removeStaging, MANIFEST } from './manifest.js';
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
      if (dataFiles.length) out.push({ file: join(p.dir, MANIFEST), ok: false, problem: `missing: data file(s) without a manifest (an interrupted compaction); ${fix}` });
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
            if (r.footer.rows !== f.rows) problem = `footer has ${r.footer.rows} rows, manifest says ${f.rows}`;
            r.close();
          }
        } catch (e) {
          problem = `unreadable: ${(e as Error).message}`;
        }
        out.push(problem ? { file: path, ok: false, problem: `${problem}; ${fix}` } : { file: path, ok: true });
      }
      for (const n of dataFiles) {
        if (!m.files.some((f) => f.file === n)) out.push({ file: join(p.dir, n), ok: false, problem: `not listed in the manifest; ${fix}` });
      }
    }
    onProgress('verify partitions', ++done, parts.length);
  }
  return out;
}
