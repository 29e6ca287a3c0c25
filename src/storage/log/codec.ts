// Payload codec. Most fields are JSON, but order-book ladders — the bulk of every book record —
// are written as length-prefixed ASCII strings: JSON.stringify/parse of 100-level ladders cost
// several times the disk write. Records whose ladders are not plain short ASCII text fall back to
// all-JSON (flag clear), so any value round-trips exactly.
//
// Ladder payload:  u32 jsonLen | JSON(rest) | ladders in the type's fixed order
// ladder:          u32 levels | per level: u8 len, price bytes, u8 len, size bytes
// checkpoint:      u32 books  | per book: u16 len, token_id bytes, bids ladder, asks ladder

import type { Ladder, Observation } from '../../schema/observation.js';

/** Ladder fields per record type, in payload order. */
const LADDER_FIELDS: Partial<Record<Observation['type'], readonly string[]>> = {
  book: ['bids', 'asks'],
  yesno_book: ['yes', 'no'],
};

/**
 * Reads a ladder from `text`, the latin1 view of the payload (one native decode for the whole
 * payload, then cheap substrings: several times faster than JSON.parse of the same ladder).
 */
function getLadder(text: string, at: number, out: { at: number }): Ladder {
  const n = text.charCodeAt(at) | (text.charCodeAt(at + 1) << 8) | (text.charCodeAt(at + 2) << 16) | (text.charCodeAt(at + 3) << 24);
  at += 4;
  const l = new Array<readonly [string, string]>(n);
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

/**
 * Scratch space the encoder writes into: the region `buf[used ..)`. `ensure(n)` guarantees at
 * least n bytes from `used` on (possibly swapping in a new `buf`). The writer's arena implements
 * it, so frames are encoded in place with no per-record buffers or result objects.
 */
export interface Arena {
  buf: Buffer;
  used: number;
  ensure(size: number): void;
}

/** Payload fields of each type that are not JSON: the header's fields and the binary ladders. */
const HEADER_KEYS = ['type', 'recv_ts', 'source_ts', 'seq'];
const NOT_JSON: Partial<Record<Observation['type'], Set<string>>> = {};
for (const [t, f] of Object.entries(LADDER_FIELDS)) NOT_JSON[t as Observation['type']] = new Set([...HEADER_KEYS, ...f]);
NOT_JSON.book_checkpoint = new Set([...HEADER_KEYS, 'books']);
const HEADER_ONLY = new Set(HEADER_KEYS);

/** `put*` results besides a position: the value needs the JSON fallback / more room. */
const NOT_BINARY = -1;
const NO_ROOM = -2;

/**
 * Checks and writes one ladder in a single pass into `buf[at .. end)`. Returns the position after
 * it, NOT_BINARY when it is not a list of short ASCII string pairs, or NO_ROOM.
 */
function putLadder(buf: Buffer, at: number, end: number, l: unknown): number {
  if (!Array.isArray(l)) return NOT_BINARY;
  const n = l.length;
  if (end - at < 4) return NO_ROOM;
  buf[at] = n;
  buf[at + 1] = n >>> 8;
  buf[at + 2] = n >>> 16;
  buf[at + 3] = n >>> 24;
  at += 4;
  let bits = 0; // OR of every char: one test at the end instead of one per char
  for (let i = 0; i < n; i++) {
    const lv = l[i] as unknown;
    if (!Array.isArray(lv) || lv.length !== 2) return NOT_BINARY;
    const p = lv[0] as unknown;
    const s = lv[1] as unknown;
    if (typeof p !== 'string' || typeof s !== 'string') return NOT_BINARY;
    const pl = p.length;
    const sl = s.length;
    if (pl > 255 || sl > 255) return NOT_BINARY;
    if (end - at < 2 + pl + sl) return NO_ROOM;
    buf[at++] = pl;
    for (let k = 0; k < pl; k++) {
      const c = p.charCodeAt(k);
      bits |= c;
      buf[at++] = c;
    }
    buf[at++] = sl;
    for (let k = 0; k < sl; k++) {
      const c = s.charCodeAt(k);
      bits |= c;
      buf[at++] = c;
    }
  }
  return bits > 0x7f ? NOT_BINARY : at;
}

/** The checkpoint's books: u32 count, then per book u16 token length, token, bids, asks. */
function putBooks(buf: Buffer, at: number, end: number, books: unknown): number {
  if (!Array.isArray(books)) return NOT_BINARY;
  if (end - at < 4) return NO_ROOM;
  buf.writeUInt32LE(books.length, at);
  at += 4;
  for (const b of books as unknown[]) {
    if (typeof b !== 'object' || b === null) return NOT_BINARY;
    const x = b as Record<string, unknown>;
    const tok = x.token_id;
    if (Object.keys(x).length !== 3 || typeof tok !== 'string' || tok.length > 65535) return NOT_BINARY;
    if (end - at < 2 + tok.length) return NO_ROOM;
    buf.writeUInt16LE(tok.length, at);
    at += 2;
    let bits = 0;
    for (let k = 0; k < tok.length; k++) {
      const c = tok.charCodeAt(k);
      bits |= c;
      buf[at++] = c;
    }
    if (bits > 0x7f) return NOT_BINARY;
    if ((at = putLadder(buf, at, end, x.bids)) < 0) return at;
    if ((at = putLadder(buf, at, end, x.asks)) < 0) return at;
  }
  return at;
}

/** Size of a ladder in the binary layout, or -1 when it is not a list of string pairs. */
function ladderBytes(l: unknown): number {
  if (!Array.isArray(l)) return -1;
  let n = 4;
  for (const lv of l as unknown[]) {
    if (!Array.isArray(lv) || lv.length !== 2 || typeof lv[0] !== 'string' || typeof lv[1] !== 'string') return -1;
    n += 2 + lv[0].length + lv[1].length;
  }
  return n;
}

/** Writes `json` at `at` (room checked for the worst case, 3 bytes a char); position after, or NO_ROOM. */
function putUtf8(buf: Buffer, at: number, end: number, json: string): number {
  if (end - at < json.length * 3) return NO_ROOM;
  return at + buf.write(json, at, 'utf8');
}

/** A JSON string literal of `s`: plain printable ASCII is copied, anything else goes through JSON.stringify. */
function putJsonString(buf: Buffer, at: number, end: number, s: string): number {
  const n = s.length;
  if (end - at < n + 2) return NO_ROOM;
  buf[at] = 0x22;
  for (let k = 0; k < n; k++) {
    const c = s.charCodeAt(k);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7f) return putUtf8(buf, at, end, JSON.stringify(s));
    buf[at + 1 + k] = c;
  }
  buf[at + 1 + n] = 0x22;
  return at + n + 2;
}

function putAsciiText(buf: Buffer, at: number, end: number, s: string): number {
  if (end - at < s.length) return NO_ROOM;
  for (let k = 0; k < s.length; k++) buf[at + k] = s.charCodeAt(k);
  return at + s.length;
}

/**
 * Writes exactly the bytes of `JSON.stringify` of `o` without the keys in `skip`, with no
 * intermediate object or string for the common flat record (string, number, boolean, null values):
 * building and stringifying that object cost as much as the binary ladders. Other values go
 * through JSON.stringify one by one (undefined/function values are left out, as it does).
 */
function putJsonObject(buf: Buffer, at: number, end: number, o: Record<string, unknown>, skip: Set<string>): number {
  if (end - at < 2) return NO_ROOM;
  buf[at++] = 0x7b; // {
  let first = true;
  for (const k in o) {
    if (skip.has(k)) continue;
    const v = o[k];
    let lit: string | undefined; // the value's JSON text when it is not a string
    const t = typeof v;
    if (t === 'string') lit = undefined;
    else if (t === 'number') lit = Number.isFinite(v) ? String(v) : 'null';
    else if (t === 'boolean') lit = v ? 'true' : 'false';
    else if (v === null) lit = 'null';
    else if (isPlainArray(v)) lit = ARRAY_INLINE;
    else if ((lit = JSON.stringify(v) as string | undefined) === undefined) continue;
    if (!first) {
      if (at >= end) return NO_ROOM;
      buf[at++] = 0x2c; // ,
    }
    first = false;
    if ((at = putJsonString(buf, at, end, k)) < 0) return at;
    if (at >= end) return NO_ROOM;
    buf[at++] = 0x3a; // :
    if (lit === undefined) at = putJsonString(buf, at, end, v as string);
    else if (lit === ARRAY_INLINE) at = putJsonArray(buf, at, end, v as unknown[]);
    else at = t === 'object' ? putUtf8(buf, at, end, lit) : putAsciiText(buf, at, end, lit);
    if (at < 0) return at;
  }
  if (at >= end) return NO_ROOM;
  buf[at++] = 0x7d; // }
  return at;
}

/** Marks a value written by putJsonArray (never a JSON text itself). */
const ARRAY_INLINE = '\u0000array';

const isPlainArray = (v: unknown): v is unknown[] => Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype;
const isFlatObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  Object.getPrototypeOf(v) === Object.prototype &&
  typeof (v as { toJSON?: unknown }).toJSON !== 'function';

/**
 * An array as JSON.stringify writes it, without building its text: elements that are strings,
 * finite numbers, booleans, null or plain flat objects (a delta's `changes`) are written in place;
 * anything else goes through JSON.stringify one element at a time (undefined/functions → null).
 */
function putJsonArray(buf: Buffer, at: number, end: number, a: unknown[]): number {
  if (end - at < 2) return NO_ROOM;
  buf[at++] = 0x5b; // [
  for (let i = 0; i < a.length; i++) {
    if (i > 0) {
      if (at >= end) return NO_ROOM;
      buf[at++] = 0x2c; // ,
    }
    const v = a[i];
    if (typeof v === 'string') at = putJsonString(buf, at, end, v);
    else if (isFlatObject(v)) at = putJsonObject(buf, at, end, v, NO_KEYS);
    else at = putUtf8(buf, at, end, JSON.stringify(v) ?? 'null');
    if (at < 0) return at;
  }
  if (at >= end) return NO_ROOM;
  buf[at++] = 0x5d; // ]
  return at;
}

const NO_KEYS = new Set<string>();

/**
 * Encodes the payload of `obs` at `arena.buf[arena.used + headroom ..)`, leaving `headroom` bytes
 * in front for the frame header, without advancing `arena.used` (the caller commits). Returns the
 * region's size (headroom + payload), negated when the binary ladder layout was NOT used.
 */
export function encodePayloadInto(obs: Observation, headroom: number, arena: Arena): number {
  const o = obs as unknown as Record<string, unknown>;
  const notJson = NOT_JSON[obs.type];
  const fields = LADDER_FIELDS[obs.type];
  // Attempt 0 writes into whatever room the arena has left; when that runs out (rare: the
  // arena's tail), it is grown to an upper bound and the record is written again.
  for (let attempt = 0; attempt < 2; attempt++) {
    const buf = arena.buf;
    const base = arena.used;
    const end = buf.length;
    let at = notJson ? putBinary(buf, base + headroom, end, o, notJson, fields) : NOT_BINARY;
    if (at >= 0) return at - base;
    if (at === NOT_BINARY) {
      at = base + headroom <= end ? putJsonObject(buf, base + headroom, end, o, HEADER_ONLY) : NO_ROOM;
      if (at >= 0) return -(at - base);
    }
    if (attempt === 0) arena.ensure(headroom + upperBound(o, fields));
  }
  throw new RangeError('encoder ran out of room twice'); // upperBound is wrong: a bug
}

/** The ladder layout: u32 jsonLen | JSON of the rest | ladders. NOT_BINARY when it does not fit them. */
function putBinary(
  buf: Buffer,
  at: number,
  end: number,
  o: Record<string, unknown>,
  notJson: Set<string>,
  fields: readonly string[] | undefined,
): number {
  if (end - at < 4) return NO_ROOM;
  const jsonAt = at + 4;
  at = putJsonObject(buf, jsonAt, end, o, notJson);
  if (at < 0) return at;
  buf.writeUInt32LE(at - jsonAt, jsonAt - 4);
  if (fields) {
    for (let i = 0; i < fields.length && at >= 0; i++) at = putLadder(buf, at, end, o[fields[i]]);
    return at;
  }
  return putBooks(buf, at, end, o.books);
}

/**
 * Room that guarantees the second attempt cannot run out, whichever layout it ends up in: the
 * room checks ask at most 3 bytes per char of a value's JSON text.
 */
function upperBound(o: Record<string, unknown>, fields: readonly string[] | undefined): number {
  let json = 8;
  for (const k of Object.keys(o)) json += 3 * (JSON.stringify(k).length + 2 + (JSON.stringify(o[k])?.length ?? 0));
  let ladders = 4;
  if (fields) for (const f of fields) ladders += Math.max(0, ladderBytes(o[f]));
  else if (Array.isArray(o.books)) {
    for (const b of o.books as unknown[]) {
      const x = (b ?? {}) as Record<string, unknown>;
      ladders += 2 + String(x.token_id).length + Math.max(0, ladderBytes(x.bids)) + Math.max(0, ladderBytes(x.asks));
    }
  }
  return json + ladders;
}

/** Decodes a payload written by encodePayloadInto (`binary` = the frame's ladder flag). */
export function decodePayload(
  type: Observation['type'],
  buf: Buffer,
  start: number,
  end: number,
  binary: boolean,
): Record<string, unknown> {
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
