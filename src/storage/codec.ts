// Payload codec. Most fields are JSON, but order-book ladders — the bulk of every book record —
// are written as length-prefixed ASCII strings: JSON.stringify/parse of 100-level ladders cost
// several times the disk write. Records whose ladders are not plain short ASCII text fall back to
// all-JSON (flag clear), so any value round-trips exactly.
//
// Ladder payload:  u32 jsonLen | JSON(rest) | ladders in the type's fixed order
// ladder:          u32 levels | per level: u8 len, price bytes, u8 len, size bytes
// checkpoint:      u32 books  | per book: u16 len, token_id bytes, bids ladder, asks ladder

import type { Ladder, Observation } from '../schema/observation.js';

type AnyLadder = readonly (readonly [string, string])[];

/** Ladder fields per record type, in payload order. */
const LADDER_FIELDS: Partial<Record<Observation['type'], readonly string[]>> = {
  book: ['bids', 'asks'],
  yesno_book: ['yes', 'no'],
};

function ladderSize(l: unknown): number {
  if (!Array.isArray(l)) return -1;
  let n = 4;
  for (let i = 0; i < l.length; i++) {
    const lv = l[i] as unknown;
    if (!Array.isArray(lv) || lv.length !== 2) return -1;
    const p = lv[0] as unknown;
    const s = lv[1] as unknown;
    if (typeof p !== 'string' || typeof s !== 'string' || p.length > 255 || s.length > 255) return -1;
    n += 2 + p.length + s.length;
  }
  return n;
}

/** Writes an ASCII string; false when it holds a non-ASCII char (the caller falls back to JSON). */
function putAscii(buf: Buffer, at: number, s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return false;
    buf[at + i] = c;
  }
  return true;
}

function putLadder(buf: Buffer, at: number, l: AnyLadder): number {
  buf.writeUInt32LE(l.length, at);
  at += 4;
  for (let i = 0; i < l.length; i++) {
    const lv = l[i];
    const p = lv[0];
    const s = lv[1];
    let n = p.length;
    buf[at++] = n;
    for (let k = 0; k < n; k++) {
      const c = p.charCodeAt(k);
      if (c > 0x7f) return -1;
      buf[at++] = c;
    }
    n = s.length;
    buf[at++] = n;
    for (let k = 0; k < n; k++) {
      const c = s.charCodeAt(k);
      if (c > 0x7f) return -1;
      buf[at++] = c;
    }
  }
  return at;
}

/**
 * Reads a ladder from `text`, the latin1 view of the payload (one native decode for the whole
 * payload, then cheap substrings: several times faster than JSON.parse of the same ladder).
 */
function getLadder(text: string, at: number, out: { at: number }): Ladder {
  const n = text.charCodeAt(at) | (text.charCodeAt(at + 1) << 8) | (text.charCodeAt(at + 2) << 16) | (text.charCodeAt(at + 3) << 24);
  at += 4;
  const l: (readonly [string, string])[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const pl = text.charCodeAt(at);
    const p = text.substring(at + 1, at + 1 + pl);
    at += 1 + pl;
    const sl = text.charCodeAt(at);
    const s = text.substring(at + 1, at + 1 + sl);
    at += 1 + sl;
    l[i] = [p, s];
  }
  out.at = at;
  return l;
}

/** Gives a writable region of `size` bytes: `buf[at .. at + size)`. */
export type Reserve = (size: number) => { readonly buf: Buffer; readonly at: number };

export interface Encoded {
  readonly buf: Buffer;
  /** Where the region (headroom included) starts in `buf`. */
  readonly at: number;
  /** Headroom + payload bytes. */
  readonly size: number;
  readonly binary: boolean;
}

/** Fields the frame header carries: never repeated in the payload. */
const HEADER_KEYS = new Set(['type', 'recv_ts', 'source_ts', 'seq']);

/**
 * Encodes the payload of `obs` into a region from `reserve`, leaving `headroom` bytes in front
 * for the frame header. `binary` tells whether the ladder layout was used.
 */
export function encodePayload(obs: Observation, headroom: number, reserve: Reserve): Encoded {
  const fields = LADDER_FIELDS[obs.type];
  const o = obs as unknown as Record<string, unknown>;
  if (fields || obs.type === 'book_checkpoint') {
    const enc = encodeLadders(o, headroom, fields, reserve);
    if (enc) return enc;
  }
  // Built key by key (not destructured + deleted): `delete` makes objects slow to stringify.
  const rest: Record<string, unknown> = {};
  for (const k in o) if (!HEADER_KEYS.has(k)) rest[k] = o[k];
  const json = JSON.stringify(rest);
  const size = headroom + Buffer.byteLength(json);
  const { buf, at } = reserve(size);
  buf.write(json, at + headroom, 'utf8');
  return { buf, at, size, binary: false };
}

function encodeLadders(o: Record<string, unknown>, headroom: number, fields: readonly string[] | undefined, reserve: Reserve): Encoded | null {
  const skip = fields ?? ['books'];
  const jsonPart: Record<string, unknown> = {};
  for (const k in o) if (!HEADER_KEYS.has(k) && !skip.includes(k)) jsonPart[k] = o[k];
  let ladBytes = 0;
  if (fields) {
    for (const f of fields) {
      const sz = ladderSize(o[f]);
      if (sz < 0) return null;
      ladBytes += sz;
    }
  } else {
    const books = o.books;
    if (!Array.isArray(books)) return null;
    ladBytes = 4;
    for (const b of books as unknown[]) {
      if (typeof b !== 'object' || b === null) return null;
      const x = b as Record<string, unknown>;
      if (Object.keys(x).length !== 3 || typeof x.token_id !== 'string' || x.token_id.length > 65535) return null;
      const sb = ladderSize(x.bids);
      const sa = ladderSize(x.asks);
      if (sb < 0 || sa < 0) return null;
      ladBytes += 2 + x.token_id.length + sb + sa;
    }
  }
  const json = JSON.stringify(jsonPart);
  const jsonBytes = Buffer.byteLength(json);
  const size = headroom + 4 + jsonBytes + ladBytes;
  // The region is only taken for good by the caller, so a non-ASCII fallback wastes nothing.
  const { buf, at: base } = reserve(size);
  buf.writeUInt32LE(jsonBytes, base + headroom);
  buf.write(json, base + headroom + 4, 'utf8');
  let at = base + headroom + 4 + jsonBytes;
  if (fields) {
    for (const f of fields) if ((at = putLadder(buf, at, o[f] as AnyLadder)) < 0) return null;
  } else {
    const books = o.books as { token_id: string; bids: AnyLadder; asks: AnyLadder }[];
    buf.writeUInt32LE(books.length, at);
    at += 4;
    for (const b of books) {
      buf.writeUInt16LE(b.token_id.length, at);
      if (!putAscii(buf, at + 2, b.token_id)) return null;
      at += 2 + b.token_id.length;
      if ((at = putLadder(buf, at, b.bids)) < 0) return null;
      if ((at = putLadder(buf, at, b.asks)) < 0) return null;
    }
  }
  return { buf, at: base, size, binary: true };
}

/** Decodes a payload written by encodePayload (`binary` = the frame's ladder flag). */
export function decodePayload(type: Observation['type'], buf: Buffer, start: number, end: number, binary: boolean): Record<string, unknown> {
  if (!binary) return JSON.parse(buf.toString('utf8', start, end)) as Record<string, unknown>;
  const jsonBytes = buf.readUInt32LE(start);
  const out = JSON.parse(buf.toString('utf8', start + 4, start + 4 + jsonBytes)) as Record<string, unknown>;
  // Offsets below are relative to `start` inside `text`.
  const text = buf.toString('latin1', start, end);
  const cur = { at: 4 + jsonBytes };
  const fields = LADDER_FIELDS[type];
  if (fields) {
    for (const f of fields) out[f] = getLadder(text, cur.at, cur);
  } else {
    const n = buf.readUInt32LE(start + cur.at);
    cur.at += 4;
    const books = new Array(n);
    for (let i = 0; i < n; i++) {
      const tl = buf.readUInt16LE(start + cur.at);
      const token_id = text.substring(cur.at + 2, cur.at + 2 + tl);
      cur.at += 2 + tl;
      const bids = getLadder(text, cur.at, cur);
      const asks = getLadder(text, cur.at, cur);
      books[i] = { token_id, bids, asks };
    }
    out.books = books;
  }
  if (start + cur.at !== end) throw new RangeError('ladder payload length mismatch');
  return out;
}
