// Sequential frame reading over a log file: a chunked scan with a synchronous per-frame callback
// (recovery, index rebuilds, verify: no promise per record) and an async iterator of decoded
// records (readers). Both stop at the first frame that is short, damaged or out of order. A scan
// from offset 0 steps over the file's format header (log/file-header.ts); legacy files have none.

import type { FileHandle } from 'node:fs/promises';
import { decodeCheckedFrame, decodeRecord, parseFrameFast, type FrameHead } from './frame.js';
import { readFileStart } from './file-header.js';
import type { Recorded } from '../../schema/observation.js';
import type { RecordChunk } from '../types.js';

const CHUNK = 1024 * 1024;

/** Why a scan ended: at `end` exactly ('eof'), inside a frame ('short'), or at damage ('bad'). */
export interface ScanStop {
  /** Offset just after the last valid frame seen. */
  readonly end: number;
  readonly reason: 'eof' | 'short' | 'bad' | 'stopped';
  readonly problem?: string;
}

/** The frame before the scan's start, so order checks continue across the boundary. */
export interface ScanPrev {
  readonly seq: number;
  readonly recvUs: number;
}

/**
 * Calls `onFrame` for every valid frame in [start, end). `buf[at]` is the frame's first byte and
 * stays valid only during the call, unless `stable`: then no frame's bytes are ever overwritten (a
 * frame crossing the buffer's end is read alone into a new buffer: for scans that stop after it,
 * like read windows). `into` is a buffer to read into (a larger one is used when it is too small).
 * Returning false stops the scan ('stopped'). A frame whose seq
 * does not increase or whose time goes backwards counts as damage, like a checksum mismatch.
 * `start` 0 means the file's beginning: its header is skipped; a torn header ends the scan at 0
 * ('short'); an unknown format version throws a StorageError.
 */
export async function scanFrames(
  fh: FileHandle,
  start: number,
  end: number,
  onFrame: (head: FrameHead, buf: Buffer, at: number) => boolean | void,
  prev?: ScanPrev | null,
  chunkBytes = CHUNK,
  stable = false,
  into?: Buffer,
): Promise<ScanStop> {
  if (start === 0 && end > 0) {
    const fileStart = await readFileStart(fh, end);
    if (fileStart.kind === 'torn') return { end: 0, reason: 'short' };
    start = fileStart.dataStart;
    if (start >= end) return { end: start, reason: 'eof' };
  }
  const size = Math.min(chunkBytes, Math.max(end - start, 64));
  let buf = into && into.length >= size ? into : Buffer.allocUnsafe(size);
  let bufStart = start; // file offset of buf[0]
  let have = 0; // valid bytes in buf
  let at = 0; // parse position in buf
  let lastSeq = prev ? prev.seq : -Infinity;
  let lastRecv = prev ? prev.recvUs : -Infinity;
  for (;;) {
    const fileAt = bufStart + at;
    if (fileAt >= end) return { end: fileAt, reason: 'eof' };
    const r = parseFrameFast(buf, at, have, fileAt);
    if (typeof r === 'object') {
      const h = r;
      if (h.seq <= lastSeq) return { end: fileAt, reason: 'bad', problem: `seq ${h.seq} does not increase (previous ${lastSeq})` };
      if (h.recvUs < lastRecv) return { end: fileAt, reason: 'bad', problem: 'receive time goes backwards' };
      if (fileAt + h.size > end) return { end: fileAt, reason: 'short' };
      lastSeq = h.seq;
      lastRecv = h.recvUs;
      if (onFrame(h, buf, at) === false) return { end: fileAt + h.size, reason: 'stopped' };
      at += h.size;
      continue;
    }
    if (typeof r === 'string') return { end: fileAt, reason: 'bad', problem: r };
    // Short: move the partial frame to the front, grow the buffer if one frame exceeds it, read on.
    const need = r;
    const remainingInFile = end - fileAt;
    if (remainingInFile < need) return { end: fileAt, reason: 'short' };
    const partial = have - at;
    if (stable && at > 0) {
      const alone = Buffer.allocUnsafe(need);
      buf.copy(alone, 0, at, have);
      buf = alone;
    } else if (need > buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(need, buf.length * 2));
      buf.copy(bigger, 0, at, have);
      buf = bigger;
    } else if (at > 0) {
      buf.copy(buf, 0, at, have);
    }
    bufStart = fileAt;
    at = 0;
    have = partial;
    const want = Math.min(buf.length - have, end - (bufStart + have));
    const { bytesRead } = await fh.read(buf, have, want, bufStart + have);
    if (bytesRead === 0) return { end: fileAt, reason: 'short' }; // the file shrank under us
    have += bytesRead;
  }
}

export interface FrameRecord {
  readonly head: FrameHead;
  readonly rec: Recorded;
}

/**
 * Decoded records from `start` up to `end`, in order; `stop` receives how the scan ended. Reads a
 * chunk at a time (growing to `maxChunkBytes` for readers that keep going), so a consumer that
 * stops early costs at most one chunk of extra I/O and holds at most one chunk of records.
 */
export async function* readFrames(
  fh: FileHandle,
  start: number,
  end: number,
  stop?: (s: ScanStop) => void,
  chunkBytes = 64 * 1024,
  maxChunkBytes = CHUNK,
): AsyncGenerator<FrameRecord> {
  let pos = start;
  let prev: ScanPrev | null = null;
  let chunkEnd = Math.min(end, pos + chunkBytes);
  while (pos < end) {
    const batch: FrameRecord[] = [];
    // Scan one chunk-sized window; a frame crossing the window's end is read whole next round.
    const s = await scanFrames(
      fh,
      pos,
      end,
      (head, buf, at) => {
        batch.push({ head, rec: decodeRecord(buf, at, head) });
        return head.offset + head.size < chunkEnd;
      },
      prev,
      chunkBytes,
    );
    for (const item of batch) yield item;
    if (batch.length > 0) {
      const last = batch[batch.length - 1].head;
      prev = { seq: last.seq, recvUs: last.recvUs };
    }
    if (s.reason !== 'stopped') {
      stop?.(s);
      return;
    }
    pos = s.end;
    chunkBytes = Math.min(chunkBytes * 2, Math.max(maxChunkBytes, chunkBytes)); // readers that keep going get bigger reads
    chunkEnd = Math.min(end, pos + chunkBytes);
  }
  stop?.({ end: pos, reason: 'eof' });
}

/** The checked frames of one read, kept as bytes: a record is decoded when it is taken. */
export class FrameBlock implements RecordChunk {
  constructor(
    /** The buffer each frame lies in (the read's, or its own for a frame that crossed the read's end). */
    private readonly bufs: readonly Buffer[],
    /** Where each frame starts in its buffer, and in the file. */
    private readonly ats: readonly number[],
    private readonly offsets: readonly number[],
    private readonly recvs: readonly number[],
  ) {}

  get length(): number {
    return this.ats.length;
  }

  recvUs(i: number): number {
    return this.recvs[i];
  }

  record(i: number): Recorded {
    return decodeCheckedFrame(this.bufs[i], this.ats[i], this.offsets[i]);
  }
}

/**
 * The frames from `start` up to `end` (the checks of scanFrames) a read of `readBytes` at a time,
 * each read as one FrameBlock (never empty) holding the read's buffer; ends at the first frame that
 * is short or damaged. Reads go into a ring of three buffers: a block is valid until the block
 * after the next one is requested (one in use, one read ahead, one being read), so a pass makes no
 * garbage buffers however long it runs.
 */
export async function* readFrameBlocks(fh: FileHandle, start: number, end: number, readBytes: number): AsyncGenerator<FrameBlock> {
  const ring: Buffer[] = [];
  let pos = start;
  let prev: ScanPrev | null = null;
  for (let k = 0; pos < end; k++) {
    const windowEnd = Math.min(end, pos + readBytes);
    if (ring.length < 3) ring.push(Buffer.allocUnsafe(readBytes));
    const bufs: Buffer[] = [];
    const ats: number[] = [];
    const offsets: number[] = [];
    const recvs: number[] = [];
    const s = await scanFrames(
      fh,
      pos,
      end,
      (head, buf, at) => {
        bufs.push(buf);
        ats.push(at);
        offsets.push(head.offset);
        recvs.push(head.recvUs);
        prev = { seq: head.seq, recvUs: head.recvUs };
        return head.offset + head.size < windowEnd;
      },
      prev,
      readBytes,
      true,
      ring[k % 3],
    );
    if (ats.length > 0) yield new FrameBlock(bufs, ats, offsets, recvs);
    if (s.reason !== 'stopped') return;
    pos = s.end;
  }
}
