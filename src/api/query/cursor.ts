// Opaque, HMAC-signed page cursors. A cursor carries its route, a digest of its query (everything
// but `limit` and `cursor`) and a stable position (a record seq, never a byte offset, so it survives
// appends and compaction). The secret lives in the data dir so every `serve` process accepts it.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PmtapeError } from '../../errors.js';

import type { CursorPos } from '../../book/book-model.js';

export type { CursorPos };

const MAX_CURSOR_CHARS = 4096;

/**
 * The market a snapshots cursor is bound to, carried in its position as `mk`: the stream's `from`
 * cannot check a cursor's query digest (it does not know the page's other parameters), so it
 * compares this instead (stream/protocol.ts).
 */
export const cursorMarket = (family: string, logMarket: string): string => `${family}/${logMarket}`;

/** Reads `<dataDir>/api/cursor.secret`, creating it atomically (write + link) when missing. */
export async function loadCursorSecret(dataDir: string): Promise<Buffer> {
  const dir = join(dataDir, 'api');
  const path = join(dir, 'cursor.secret');
  await mkdir(dir, { recursive: true });
  const read = async (): Promise<Buffer | null> => {
    try {
      const text = (await readFile(path, 'utf8')).trim();
      return /^[0-9a-f]{64}$/.test(text) ? Buffer.from(text, 'hex') : null;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  };
  const existing = await read();
  if (existing) return existing;
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  try {
    await link(tmp, path); // fails with EEXIST when another process won the race: use theirs
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await rm(tmp, { force: true });
  }
  const secret = await read();
  if (!secret) throw new Error(`${path} is damaged: remove it (outstanding cursors become invalid)`);
  return secret;
}

/** Canonical digest of a query: sorted keys, `limit` and `cursor` left out. */
export function queryDigest(route: string, query: Record<string, unknown>): string {
  const keys = Object.keys(query)
    .filter((k) => k !== 'limit' && k !== 'cursor' && query[k] !== undefined)
    .sort();
  const canon = JSON.stringify([route, keys.map((k) => [k, String(query[k])])]);
  return createHash('sha256').update(canon).digest('base64url').slice(0, 22);
}

const invalid = (why: string): PmtapeError =>
  new PmtapeError('invalid_cursor', `Parameter 'cursor' ${why}; pass next_cursor exactly as returned, with the same query.`);

export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  private mac(body: string): Buffer {
    return createHmac('sha256', this.secret).update(body).digest().subarray(0, 18);
  }

  /**
   * The value of the header that asks a server for one side of a stitched page (src/api/live/):
   * only a server holding the same secret (as every server a cursor travels between must) knows it.
   */
  partToken(): string {
    return createHmac('sha256', this.secret).update('pmtape-live-part').digest('base64url').slice(0, 32);
  }

  /** `route` names the logical route (aliases share it); `query` is the request's query plus the resolved path ids. */
  encode(route: string, query: Record<string, unknown>, pos: CursorPos): string {
    const body = Buffer.from(JSON.stringify({ q: queryDigest(route, query), p: pos })).toString('base64url');
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /** The position of a cursor, or invalid_cursor when it is forged, damaged or from another query. */
  decode(text: string, route: string, query: Record<string, unknown>): CursorPos {
    if (text.length > MAX_CURSOR_CHARS) throw invalid('is too long');
    const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{24})$/.exec(text);
    if (!m) throw invalid('is malformed or truncated');
    const given = Buffer.from(m[2], 'base64url');
    const want = this.mac(m[1]);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw invalid('has been altered');
    let parsed: { q?: unknown; p?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as { q?: unknown; p?: unknown };
    } catch {
      throw invalid('is malformed');
    }
    if (parsed.q !== queryDigest(route, query)) throw invalid('belongs to a different query (only limit may change)');
    if (typeof parsed.p !== 'object' || parsed.p === null) throw invalid('is malformed');
    return parsed.p as CursorPos;
  }
}
