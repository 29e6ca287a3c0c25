// The on-disk frame of one record. Little-endian:
//   u32 len | u32 crc32c | u8 type | u8 flags | i64 recv_us | i64 source_us | i64 seq | payload
// `len` counts the bytes after the first 8 (header + payload); the CRC-32C covers exactly those.
// The payload is the observation minus the header fields (type, times, seq): JSON, with book
// ladders in a compact binary layout when flag 4 is set (see codec.ts).

import { crc32c } from '@node-rs/crc32';
import { StorageError } from '../../errors.js';
import type { Observation, ObservationType, Recorded } from '../../schema/observation.js';
import { decodePayload, encodePayloadInto, type Arena } from './codec.js';

export type { Arena } from './codec.js';

export const PREFIX_BYTES = 8;
export const HEADER_BYTES = 26;
export const FRAME_OVERHEAD = PREFIX_BYTES + HEADER_BYTES;
/** A length field above this is damage, not a record (bounds what a reader ever allocates). */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

export const FLAG_SOURCE = 1;
export const FLAG_CHECKPOINT = 2;
/** The payload uses the binary ladder layout of codec.ts. */
export const FLAG_LADDERS = 4;

const TYPE_CODES: Record<ObservationType, number> = {
  book: 1,
  book_delta: 2,
  book_checkpoint: 3,
  yesno_book: 4,
  trade: 5,
  tick_size: 6,
  gap: 7,
  metric: 8,
  catalog: 9,
};
const TYPE_NAMES: ObservationType[] = [];
for (const [name, code] of Object.entries(TYPE_CODES)) TYPE_NAMES[code] = name as ObservationType;

/** Largest |µs| or seq a frame can carry exactly (JS numbers are exact below 2^53). */
const MAX_INT = Number.MAX_SAFE_INTEGER;
/** recv_ts is accepted up to this epoch ms (year 2255), so its µs value stays exact. */
export const MAX_RECV_MS = 9e12;

const TWO32 = 0x1_0000_0000;

export function writeI64(buf: Buffer, v: number, at: number): void {
  const hi = Math.floor(v / TWO32);
  buf.writeInt32LE(hi, at + 4);
  buf.writeUInt32LE(v - hi * TWO32, at);
}

export function readI64(buf: Buffer, at: number): number {
  return buf.readInt32LE(at + 4) * TWO32 + buf.readUInt32LE(at);
}

/** Header fields of a frame, parsed without touching the payload's JSON. */
export interface FrameHead {
  readonly offset: number;
  /** Whole frame size in bytes, prefix included. */
  readonly size: number;
  readonly type: number;
  readonly flags: number;
  readonly recvUs: number;
  readonly sourceUs: number | null;
  readonly seq: number;
}

export const msToUs = (ms: number): number => Math.round(ms * 1000);

/** Builds the frame of `obs` with `seq`; throws StorageError for values a frame cannot hold. */
export function encodeFrame(obs: Observation, seq: number, checkpoint: boolean): Buffer {
  const arena: Arena = {
    buf: Buffer.alloc(0),
    used: 0,
    ensure(size) {
      this.buf = Buffer.allocUnsafe(size);
      this.used = 0;
    },
  };
  const size = encodeFrameAt(arena, obs, seq, checkpoint);
  return arena.buf.subarray(0, size);
}

/**
 * Encodes the frame at `arena.buf[arena.used ..)` and returns its size; the caller commits it by
 * advancing `arena.used` (read `arena.buf` after the call: the arena may have swapped buffers).
 * Throws StorageError, having committed nothing.
 */
export function encodeFrameAt(arena: Arena, obs: Observation, seq: number, checkpoint: boolean): number {
  if (typeof obs !== 'object' || obs === null)
    throw new StorageError(`a record must be an object, got ${obs === null ? 'null' : typeof obs}`);
  const code = TYPE_CODES[obs.type];
  if (code === undefined) throw new StorageError(`unknown record type ${JSON.stringify(obs.type)}`);
  const recvMs = obs.recv_ts;
  if (typeof recvMs !== 'number' || !(recvMs >= 0 && recvMs <= MAX_RECV_MS)) {
    throw new StorageError(`recv_ts ${String(recvMs)} is not an epoch ms time`);
  }
  const src = obs.source_ts;
  const hasSource = src !== null && src !== undefined;
  let sourceUs = 0;
  if (hasSource) {
    sourceUs = msToUs(src);
    if (typeof src !== 'number' || !(Math.abs(sourceUs) <= MAX_INT))
      throw new StorageError(`source_ts ${String(src)} is not an epoch ms time`);
  }
  let size: number;
  try {
    size = encodePayloadInto(obs, FRAME_OVERHEAD, arena);
  } catch (e) {
    throw new StorageError(`record cannot be encoded: ${(e as Error).message}`);
  }
  const binary = size > 0;
  if (!binary) size = -size;
  if (size - PREFIX_BYTES > MAX_FRAME_BYTES) throw new StorageError(`record of ${size} bytes exceeds the frame limit`);
  const buf = arena.buf;
  const at = arena.used;
  buf.writeUInt32LE(size - PREFIX_BYTES, at);
  buf[at + 8] = code;
  buf[at + 9] = (hasSource ? FLAG_SOURCE : 0) | (checkpoint ? FLAG_CHECKPOINT : 0) | (binary ? FLAG_LADDERS : 0);
  writeI64(buf, msToUs(recvMs), at + 10);
  writeI64(buf, sourceUs, at + 18);
  writeI64(buf, seq, at + 26);
  buf.writeUInt32LE(crc32c(buf.subarray(at + PREFIX_BYTES, at + size)), at + 4);
  return size;
}

export type ParseResult =
  | { readonly status: 'ok'; readonly head: FrameHead }
  /** Not enough bytes in `buf` yet: need `need` bytes from `at` (a torn or growing tail). */
  | { readonly status: 'short'; readonly need: number }
  | { readonly status: 'bad'; readonly problem: string };

/**
 * Parses and checksums the frame starting at `buf[at]`; `fileOffset` is that byte's position in
 * the file. `short` means the buffer ends inside the frame; `bad` means it can never be valid.
 */
export function parseFrame(buf: Buffer, at: number, fileOffset: number): ParseResult {
  const r = parseFrameFast(buf, at, buf.length, fileOffset);
  if (typeof r === 'number') return { status: 'short', need: r };
  if (typeof r === 'string') return { status: 'bad', problem: r };
  return { status: 'ok', head: r };
}

/**
 * parseFrame without the result wrapper, for scans: the head, or the number of bytes the frame
 * needs from `at` when `buf[at .. limit)` ends inside it, or a problem text when it is damaged.
 */
export function parseFrameFast(buf: Buffer, at: number, limit: number, fileOffset: number): FrameHead | number | string {
  if (limit - at < PREFIX_BYTES) return PREFIX_BYTES;
  const len = buf.readUInt32LE(at);
  if (len < HEADER_BYTES || len > MAX_FRAME_BYTES) return `bad frame length ${len}`;
  const size = len + PREFIX_BYTES;
  if (limit - at < size) return size;
  if (crc32c(buf.subarray(at + PREFIX_BYTES, at + size)) !== buf.readUInt32LE(at + 4)) return 'checksum mismatch';
  const type = buf[at + 8];
  if (TYPE_NAMES[type] === undefined) return `unknown record type ${type}`;
  const flags = buf[at + 9];
  return {
    offset: fileOffset,
    size,
    type,
    flags,
    recvUs: readI64(buf, at + 10),
    sourceUs: flags & FLAG_SOURCE ? readI64(buf, at + 18) : null,
    seq: readI64(buf, at + 26),
  };
}

/**
 * Decodes the record of a frame a scan already checked (`at` = frame start in `buf`, `offset` its
 * place in the file): the header is read again, the checksum is not.
 */
export function decodeCheckedFrame(buf: Buffer, at: number, offset: number): Recorded {
  const flags = buf[at + 9];
  return decodeRecord(buf, at, {
    offset,
    size: buf.readUInt32LE(at) + PREFIX_BYTES,
    type: buf[at + 8],
    flags,
    recvUs: readI64(buf, at + 10),
    sourceUs: flags & FLAG_SOURCE ? readI64(buf, at + 18) : null,
    seq: readI64(buf, at + 26),
  });
}

/** Decodes the record of a frame that parseFrame accepted (`at` = frame start in `buf`). */
export function decodeRecord(buf: Buffer, at: number, head: FrameHead): Recorded {
  let rest: Record<string, unknown>;
  try {
    rest = decodePayload(TYPE_NAMES[head.type], buf, at + FRAME_OVERHEAD, at + head.size, (head.flags & FLAG_LADDERS) !== 0);
  } catch {
    // The checksum matched, so these bytes are what the writer wrote; this is a bug, not damage.
    throw new StorageError('frame payload cannot be decoded', undefined, head.offset);
  }
  return {
    type: TYPE_NAMES[head.type],
    recv_ts: head.recvUs / 1000,
    source_ts: head.sourceUs === null ? null : head.sourceUs / 1000,
    ...rest,
    seq: head.seq,
  } as Recorded;
}
