// Where `pmtape pull` puts a file the server lists: `DIR/<path>`, after checking that the path
// cannot leave DIR (a hostile or broken server must not write anywhere else), and the staging name
// a download lives under until its sha256 is verified (`_<name>.part`: engines skip `_` files and
// `*.parquet` globs do not match it).

import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** One segment of a listed path: Hive `key=value` folders and plain file names, nothing else. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9=._-]{0,254}$/;
const MAX_PATH = 1024;

/** The file named by the sidecar cache (see cache.ts); listed paths can never collide with it. */
export const CACHE_FILE = '.pmtape-pull.json';

export interface LocalPaths {
  /** Where the verified file is published. */
  readonly dest: string;
  /** Where its download is staged (and resumed from). */
  readonly part: string;
}

/**
 * Maps a listed path onto DIR, or explains why it is refused. Refused: absolute paths, `..` and `.`
 * segments, empty segments, backslashes, control characters, segments starting with `_` or `.`
 * (those names are ours: staging files and the cache) and anything that would resolve outside DIR.
 */
export function localPaths(outDir: string, path: unknown): LocalPaths | string {
  if (typeof path !== 'string' || path.length === 0) return 'the listing gave no path';
  if (path.length > MAX_PATH) return `the path is longer than ${MAX_PATH} characters`;
  if (isAbsolute(path) || path.startsWith('/')) return 'absolute paths are refused';
  const segments = path.split('/');
  for (const s of segments) {
    if (s === '..' || s === '.') return `"${s}" segments are refused (the path must stay under the output folder)`;
    if (!SEGMENT.test(s)) return `the segment "${s.slice(0, 80)}" is not a plain file or folder name`;
  }
  const root = resolve(outDir);
  const dest = resolve(root, ...segments);
  const rel = relative(root, dest);
  // Belt and braces: the segment rules above already make this impossible.
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).includes('..'))
    return 'the path resolves outside the output folder';
  return { dest, part: join(dirname(dest), `_${basename(dest)}.part`) };
}

/** The listed path as a URL path under `/v3/datasets/files/`: each segment percent-encoded, `=` kept. */
export function fileUrlPath(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s).replaceAll('%3D', '='))
    .join('/');
}
