// Reader of captured upstream message files (API.md §1 import formats), shared by `pmtape import`
// and `pmtape sim --replay`: JSONL with one raw message per line or `{"recv_ts": <ms>, "msg": <raw>}`
// per line (extra keys such as `ticker` are kept), or one JSON array of messages.

import { createReadStream } from 'node:fs';

export interface CapturedMessage {
  /** Receive time from the capture, or null for a bare message. */
  readonly recv_ts: number | null;
  readonly msg: unknown;
  /** 1-based line (or array index + 1) for error messages. */
  readonly line: number;
  /** Other keys of a wrapper line (e.g. `ticker` for yes/no books). */
  readonly extra?: Record<string, unknown>;
  /** Length of the message's JSON text (readers bound what they hold by it). */
  readonly bytes?: number;
}

export interface CaptureProblem {
  readonly line: number;
  readonly problem: string;
}

function unwrap(v: unknown, line: number, bytes?: number): CapturedMessage {
  const size = bytes === undefined ? {} : { bytes };
  if (v && typeof v === 'object' && !Array.isArray(v) && 'msg' in v) {
    const { recv_ts, msg, ...extra } = v as { recv_ts?: unknown; msg: unknown };
    const ts = typeof recv_ts === 'number' && Number.isSafeInteger(recv_ts) && recv_ts > 0 ? recv_ts : null;
    return { recv_ts: ts, msg, line, ...(Object.keys(extra).length ? { extra } : {}), ...size };
  }
  return { recv_ts: null, msg: v, line, ...size };
}

export type CaptureItem = { readonly message: CapturedMessage } | { readonly problem: CaptureProblem };

/** One message (a JSONL line or an array element) larger than this is reported, never held. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/**
 * A file whose first line opens an array is one JSON array of messages, unless that array closes
 * on line 1 and more lines follow (JSONL whose first message is a batch). Line 1's elements wait
 * to be told apart up to this many bytes; a longer first line is taken for a minified array.
 */
const FIRST_LINE_WAIT_BYTES = 8 * 1024 * 1024;

const NL = 0x0a;
const isWs = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * Reads a capture incrementally (`push` each chunk, then `end`): JSONL line by line, a JSON array
 * element by element, so no file is ever held whole (a large one would not fit in a string).
 * Bad lines and a cut-off array are reported as problems, never thrown.
 */
export class CaptureScanner {
  private mode: 'start' | 'lines' | 'array' = 'start';
  /** Bytes of the current JSONL line or array element. */
  private parts: Buffer[] = [];
  private partBytes = 0;
  private oversized = false;
  private line = 1;
  /** After line 1 turned out to be JSONL: the rest of line 1 is already read. */
  private skipLine = false;
  // Array state: nesting depth, inside a string, after a backslash, elements seen, closed.
  private depth = 0;
  private inString = false;
  private escaped = false;
  private index = 0;
  private closed = false;
  private trailing = false;
  // While the array on line 1 is not yet known to be the whole file: its elements, line 1's bytes.
  private pending: CapturedMessage[] | null = null;
  private firstLine: Buffer[] = [];
  private firstLineBytes = 0;
  private firstLineNo = 1;
  private firstLineDone = false;

  push(chunk: Buffer): CaptureItem[] {
    const out: CaptureItem[] = [];
    let i = 0;
    if (this.mode === 'start') {
      while (i < chunk.length && (isWs(chunk[i]) || chunk[i] === 0xef || chunk[i] === 0xbb || chunk[i] === 0xbf)) {
        if (chunk[i] === NL) this.line++;
        i++;
      }
      if (i === chunk.length) return out;
      if (chunk[i] === 0x5b /* [ */) {
        this.mode = 'array';
        this.pending = [];
        this.depth = 1;
        this.firstLineNo = this.line;
        this.firstLine.push(Buffer.from('['));
        i++;
      } else this.mode = 'lines';
    }
    if (this.mode === 'lines') {
      this.lines(chunk, i, out);
      return out;
    }
    if (this.pending && !this.firstLineDone) {
      const nl = chunk.indexOf(NL, i);
      const piece = chunk.subarray(i, nl < 0 ? chunk.length : nl);
      this.firstLine.push(piece);
      this.firstLineBytes += piece.length;
      this.firstLineDone = nl >= 0;
    }
    this.array(chunk, i, out);
    // The array goes on past line 1 (or line 1 is too long to be one JSONL message): the array format.
    if (this.mode === 'array' && this.pending && !this.closed && (this.firstLineDone || this.firstLineBytes > FIRST_LINE_WAIT_BYTES))
      this.commit(out);
    return out;
  }

  end(): CaptureItem[] {
    const out: CaptureItem[] = [];
    if (this.mode === 'lines') {
      if (!this.skipLine) this.endLine(out);
    } else if (this.mode === 'array') {
      if (this.pending) this.commit(out); // nothing followed line 1's array: the array format
      if (!this.closed) {
        this.parts = [];
        out.push({
          problem: {
            line: this.index + 1,
            problem: `the JSON array is cut off after ${this.index} complete message(s) (a truncated file?); the rest could not be read`,
          },
        });
      }
    }
    return out;
  }

  private add(chunk: Buffer, from: number, to: number): void {
    if (to <= from || this.oversized) return;
    if (this.partBytes + (to - from) > MAX_MESSAGE_BYTES) {
      this.oversized = true;
      this.parts = [];
      return;
    }
    this.parts.push(chunk.subarray(from, to));
    this.partBytes += to - from;
  }

  private take(): string | null {
    const text = this.oversized ? null : Buffer.concat(this.parts, this.partBytes).toString('utf8');
    this.parts = [];
    this.partBytes = 0;
    this.oversized = false;
    return text;
  }

  private lines(chunk: Buffer, i: number, out: CaptureItem[]): void {
    for (;;) {
      const nl = chunk.indexOf(NL, i);
      if (nl < 0) {
        if (!this.skipLine) this.add(chunk, i, chunk.length);
        return;
      }
      if (this.skipLine) this.skipLine = false;
      else {
        this.add(chunk, i, nl);
        this.endLine(out);
      }
      this.line++;
      i = nl + 1;
    }
  }

  private parseLine(text: string, line: number, out: CaptureItem[]): void {
    const l = text.trim();
    if (l === '') return;
    try {
      out.push({ message: unwrap(JSON.parse(l), line, l.length) });
    } catch (e) {
      out.push({ problem: { line, problem: `not JSON (${(e as Error).message.slice(0, 60)})` } });
    }
  }

  private endLine(out: CaptureItem[]): void {
    const big = this.oversized;
    const text = this.take();
    if (big) out.push({ problem: { line: this.line, problem: `longer than ${MAX_MESSAGE_BYTES} bytes; not read` } });
    else this.parseLine(text!, this.line, out);
  }

  private commit(out: CaptureItem[]): void {
    for (const m of this.pending ?? []) out.push({ message: m });
    this.pending = null;
    this.firstLine = [];
  }

  private element(out: CaptureItem[]): void {
    const big = this.oversized;
    const text = this.take();
    const at = this.index + 1;
    if (!big && text!.trim() === '') return; // `[]` or a trailing comma
    this.index++;
    if (big) {
      out.push({ problem: { line: at, problem: `array element longer than ${MAX_MESSAGE_BYTES} bytes; not read` } });
      return;
    }
    let v: unknown;
    try {
      v = JSON.parse(text!);
    } catch (e) {
      out.push({ problem: { line: at, problem: `not JSON (${(e as Error).message.slice(0, 60)})` } });
      return;
    }
    if (this.pending) this.pending.push(unwrap(v, at, text!.length));
    else out.push({ message: unwrap(v, at, text!.length) });
  }

  private array(chunk: Buffer, i: number, out: CaptureItem[]): void {
    let from = i;
    for (; i < chunk.length; i++) {
      const b = chunk[i];
      if (this.closed) {
        // After the top-level array only whitespace may follow; else line 1 was one JSONL message.
        if (isWs(b)) {
          if (b === NL) this.line++;
          continue;
        }
        if (this.pending) return this.toLines(chunk, i, out);
        if (!this.trailing) out.push({ problem: { line: this.line, problem: 'content after the JSON array is ignored' } });
        this.trailing = true;
        return;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c) this.escaped = true;
        else if (b === 0x22) this.inString = false;
        continue;
      }
      if (b === 0x22) this.inString = true;
      else if (b === 0x5b || b === 0x7b) this.depth++;
      else if (b === 0x5d || b === 0x7d) {
        if (--this.depth === 0) {
          this.add(chunk, from, i);
          this.element(out);
          this.closed = true;
        }
      } else if (b === 0x2c && this.depth === 1) {
        this.add(chunk, from, i);
        this.element(out);
        from = i + 1;
      } else if (b === NL) this.line++;
    }
    if (!this.closed) this.add(chunk, from, chunk.length);
  }

  /** Line 1 held one batch message and more follows: the file is JSONL after all. */
  private toLines(chunk: Buffer, i: number, out: CaptureItem[]): void {
    const onFirstLine = !this.firstLineDone;
    const first = Buffer.concat(this.firstLine).toString('utf8');
    this.pending = null;
    this.firstLine = [];
    this.parts = [];
    this.partBytes = 0;
    this.mode = 'lines';
    this.parseLine(first, this.firstLineNo, out);
    if (onFirstLine) {
      this.line = this.firstLineNo;
      this.skipLine = true;
    }
    this.lines(chunk, i, out);
  }
}

/** Parses a whole capture's text (small files: `sim --replay`); bad lines are listed, never fatal. */
export function parseCapture(text: string): { messages: CapturedMessage[]; problems: CaptureProblem[] } {
  const sc = new CaptureScanner();
  const items = [...sc.push(Buffer.from(text, 'utf8')), ...sc.end()];
  return {
    messages: items.flatMap((x) => ('message' in x ? [x.message] : [])),
    problems: items.flatMap((x) => ('problem' in x ? [x.problem] : [])),
  };
}

/** A capture file's messages and problems in file order, read in chunks (never whole). */
export async function* readCapture(path: string): AsyncGenerator<CaptureItem> {
  const sc = new CaptureScanner();
  const stream = createReadStream(path, { highWaterMark: 256 * 1024 });
  for await (const chunk of stream as AsyncIterable<Buffer>) yield* sc.push(chunk);
  yield* sc.end();
}

/** The venue time of a raw message (its `timestamp`, or the first event's in a batch), or null. */
export function sourceTimeOf(msg: unknown): number | null {
  const first: unknown = Array.isArray(msg) ? msg[0] : msg;
  if (!first || typeof first !== 'object') return null;
  const t = (first as { timestamp?: unknown; updatedAt?: unknown }).timestamp;
  const n = typeof t === 'string' ? Number(t) : typeof t === 'number' ? t : NaN;
  if (Number.isSafeInteger(n) && n > 0) return n < 1e11 ? n * 1000 : n;
  const u = (first as { updatedAt?: unknown }).updatedAt;
  const ms = typeof u === 'string' ? Date.parse(u) : NaN;
  if (Number.isFinite(ms)) return ms;
  // wallet pushes and REST bodies (`data.updateTimestampMs` / `data.timestampMs`), yes/no market bodies
  const d = (first as { data?: { updateTimestampMs?: unknown; timestampMs?: unknown } }).data;
  const w = d && typeof d === 'object' ? (d.updateTimestampMs ?? d.timestampMs) : undefined;
  if (typeof w === 'number' && Number.isSafeInteger(w) && w > 0) return w;
  const mk = (first as { market?: { updated_time?: unknown } }).market;
  const yt = mk && typeof mk === 'object' && typeof mk.updated_time === 'string' ? Date.parse(mk.updated_time) : NaN;
  return Number.isFinite(yt) ? yt : null;
}
