// The format marker at the start of every day file written since format version 1, so a reader can
// tell which layout it holds (as Kafka's batches and our Parquet footers carry a version):
//
//   offset 0   6 bytes  magic "PMTLOG"
//   offset 6   u16 LE   format version (1: frames as in frame.ts follow from offset 16)
//   offset 8   u32 LE   flags, 0 (reserved)
//   offset 12  u32 LE   CRC-32C of bytes 0..12
//
// Files written before the marker existed ("legacy", version 0) start directly with a frame; they
// still read. They cannot be mistaken for a header: their first 4 bytes are a frame length ≤ 64 MiB,
// and "PMTL" read as u32 LE is 1.28e9. A file shorter than the header that begins like one is a torn
// header (the writer died creating it): it holds no record. A newer version is refused by name.

import type { FileHandle } from 'node:fs/promises';
import { crc32c } from '@node-rs/crc32';
import { StorageError } from '../../errors.js';

export const FILE_HEADER_BYTES = 16;
export const FORMAT_VERSION = 1;
const MAGIC = Buffer.from('PMTLOG', 'latin1');

/** How a day file begins: where its frames start, or a torn header (no record, truncate to 0). */
export type FileStart =
  | { readonly kind: 'legacy'; readonly dataStart: 0 }
  | { readonly kind: 'v1'; readonly dataStart: typeof FILE_HEADER_BYTES }
  | { readonly kind: 'torn'; readonly dataStart: 0 };

const LEGACY: FileStart = { kind: 'legacy', dataStart: 0 };
const V1: FileStart = { kind: 'v1', dataStart: FILE_HEADER_BYTES };
const TORN: FileStart = { kind: 'torn', dataStart: 0 };

/** The header of a new day file. */
export function encodeFileHeader(): Buffer {
  const buf = Buffer.alloc(FILE_HEADER_BYTES);
  MAGIC.copy(buf, 0);
  buf.writeUInt16LE(FORMAT_VERSION, 6);
  buf.writeUInt32LE(0, 8);
  buf.writeUInt32LE(crc32c(buf.subarray(0, 12)), 12);
  return buf;
}

/**
 * Classifies the first bytes of a day file (`head` = its first min(size, 16) bytes). Throws a
 * StorageError naming `file` for a version this code does not read or a damaged header: such a
 * file is never truncated or appended to, and nothing is guessed about its frames.
 */
export function parseFileStart(head: Buffer, file = 'a log file'): FileStart {
  const n = Math.min(head.length, MAGIC.length);
  if (n === 0) return LEGACY; // empty: nothing to read either way
  if (!head.subarray(0, n).equals(MAGIC.subarray(0, n))) return LEGACY;
  // Fewer than 4 bytes could also be a torn legacy frame length: either way the file holds no record.
  if (head.length < FILE_HEADER_BYTES) return TORN;
  const version = head.readUInt16LE(6);
  if (version !== FORMAT_VERSION) {
    throw new StorageError(
      `${file} has log format version ${version}; this pmtape reads versions up to ${FORMAT_VERSION} (upgrade pmtape to read it)`,
      file,
      6,
    );
  }
  if (crc32c(head.subarray(0, 12)) !== head.readUInt32LE(12)) {
    throw new StorageError(`${file} has a damaged file header (checksum mismatch); it was left untouched`, file, 0);
  }
  return V1;
}

/** Reads and classifies the start of the open file `fh` of `size` bytes (see parseFileStart). */
export async function readFileStart(fh: FileHandle, size: number, file?: string): Promise<FileStart> {
  const want = Math.min(size, FILE_HEADER_BYTES);
  if (want === 0) return LEGACY;
  const head = Buffer.alloc(want);
  const { bytesRead } = await fh.read(head, 0, want, 0);
  return parseFileStart(head.subarray(0, bytesRead), file);
}

/** True when an index entry may be a file's first: at the first frame of a legacy or a v1 file. */
export const isFirstFrameOffset = (offset: number): boolean => offset === 0 || offset === FILE_HEADER_BYTES;
