// Payload codec. Most fields are JSON, but order-book ladders — the bulk of every book record —
// are written as length-prefixed ASCII strings: JSON.stringify/parse of 100-level ladders cost
// several times the disk write. Records whose ladders are not plain short ASCII text fall back to
// all-JSON (flag clear), so any value round-trips exactly.
//
// Ladder payload:  u32 jsonLen | JSON(rest) | ladders in the type's fixed order
// ladder:          u32 levels | per level: u8 len, price bytes, u8 len, size bytes
// checkpoint:      u32 books  | per book: u16 len, token_id bytes, bids ladder, asks ladder

import type { Ladder, Observation } from '../schema/observation.js';

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

/** Exact size of a ladder in the binary layout (only asked after a NO_ROOM). */
function ladderSize(l: unknown): number {
  let n = 4;
  for (const lv of l as (readonly [string, string])[]) n += 2 + lv[0].length + lv[1].length;
  return n;
}

function binarySize(o: Record<string, unknown>, fields: readonly string[] | undefined): number {
  let n = 0;
  if (fields) for (const f of fields) n += ladderSize(o[f]);
  else {
    n = 4;
    for (const b of o.books as { token_id: string; bids: unknown; asks: unknown }[]) n += 2 + b.token_id.length + ladderSize(b.bids) + ladderSize(b.asks);
  }
  return n;
}

/** Writes `json` at `at` (room checked for the worst case, 3 bytes a char); bytes written or NO_ROOM. */
function putJson(buf: Buffer, at: number, end: number, json: string): number {
  if (end - at < json.length * 3) return NO_ROOM;
  return buf.write(json, at, 'utf8');
}

/**
 * Encodes the payload of `obs` at `arena.buf[arena.used + headroom ..)`, leaving `headroom` bytes
 * in front for the frame header, without advancing `arena.used` (the caller commits). Returns the
 * region's size (headroom + payload), negated when the binary ladder layout was NOT used.
 */
export function encodePayloadInto(obs: Observation, headroom: number, arena: Arena): number {
  const o = obs as unknown as Record<string, unknown>;
  const notJson = NOT_JSON[obs.type];
  if (notJson) {
    const fields = LADDER_FIELDS[obs.type];
    // Built key by key (not destructured + deleted): `delete` makes objects slow to stringify.
    const jsonPart: Record<string, unknown> = {};
    for (const k in o) if (!notJson.has(k)) jsonPart[k] = o[k];
    const json = JSON.stringify(jsonPart);
    for (let attempt = 0; attempt < 2; attempt++) {
      const buf = arena.buf;
      const base = arena.used;
      const end = buf.length;
      let at = base + headroom + 4;
      const jsonBytes = at <= end ? putJson(buf, at, end, json) : NO_ROOM;
      if (jsonBytes >= 0) {
        buf.writeUInt32LE(jsonBytes, at - 4);
        at += jsonBytes;
        if (fields) {
          for (let i = 0; i < fields.length && at >= 0; i++) at = putLadder(buf, at, end, o[fields[i]]);
        } else at = putBooks(buf, at, end, o.books);
      } else at = NO_ROOM;
      if (at >= 0) return at - base;
      if (at === NOT_BINARY) break;
      // Out of room (rare: the arena's tail): size it exactly and write again.
      arena.ensure(headroom + 4 + json.length * 3 + binarySize(o, fields));
    }
  }
  const rest: Record<string, unknown> = {};
  for (const k in o) if (!HEADER_ONLY.has(k)) rest[k] = o[k];
  const json = JSON.stringify(rest);
  if (arena.buf.length - arena.used < headroom + json.length * 3) arena.ensure(headroom + json.length * 3);
  return -(headroom + arena.buf.write(json, arena.used + headroom, 'utf8'));
}

/** Decodes a payload written by encodePayloadInto (`binary` = the frame's ladder flag). */
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
