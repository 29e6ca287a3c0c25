// The note beside a staged download: `_<name>.part` holds a prefix of the listed file and
// `_<name>.part.json` says which file (sha256, size) and the ETag of the response the bytes came
// from, which the next request sends back as `If-Range`. One small write per download start, so
// a pull killed at any moment can resume; a part without a readable note is started over.

import { readFile, unlink, writeFile } from 'node:fs/promises';

export interface StagedDownload {
  readonly sha256: string;
  readonly bytes: number;
  /** null: the server sent no ETag, so the prefix cannot be checked and is not resumed. */
  readonly etag: string | null;
}

const noteOf = (part: string): string => `${part}.json`;

export async function readStaged(part: string): Promise<StagedDownload | null> {
  try {
    const s = JSON.parse(await readFile(noteOf(part), 'utf8')) as Partial<StagedDownload> | null;
    if (typeof s?.sha256 !== 'string' || typeof s.bytes !== 'number' || !(s.etag === null || typeof s.etag === 'string')) return null;
    return { sha256: s.sha256, bytes: s.bytes, etag: s.etag };
  } catch {
    return null;
  }
}

export async function writeStaged(part: string, s: StagedDownload): Promise<void> {
  await writeFile(noteOf(part), JSON.stringify(s));
}

/** Removes the note (and the staged bytes unless `keepPart`); missing files are fine. */
export async function dropStaged(part: string, keepPart = false): Promise<void> {
  await unlink(noteOf(part)).catch(() => undefined);
  if (!keepPart) await unlink(part).catch(() => undefined);
}
