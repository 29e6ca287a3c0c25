// Reader of captured upstream message files (API.md §1 import formats), shared by `pmtape import`
// and `pmtape sim --replay`: JSONL with one raw message per line or `{"recv_ts": <ms>, "msg": <raw>}`
// per line (extra keys such as `ticker` are kept), or one JSON array of messages.

import { readFile } from 'node:fs/promises';

export interface CapturedMessage {
  /** Receive time from the capture, or null for a bare message. */
  readonly recv_ts: number | null;
  readonly msg: unknown;
  /** 1-based line (or array index + 1) for error messages. */
  readonly line: number;
  /** Other keys of a wrapper line (e.g. `ticker` for yes/no books). */
  readonly extra?: Record<string, unknown>;
}

export interface CaptureProblem {
  readonly line: number;
  readonly problem: string;
}

function unwrap(v: unknown, line: number): CapturedMessage {
  if (v && typeof v === 'object' && !Array.isArray(v) && 'msg' in v) {
    const { recv_ts, msg, ...extra } = v as { recv_ts?: unknown; msg: unknown };
    const ts = typeof recv_ts === 'number' && Number.isSafeInteger(recv_ts) && recv_ts > 0 ? recv_ts : null;
    return { recv_ts: ts, msg, line, ...(Object.keys(extra).length ? { extra } : {}) };
  }
  return { recv_ts: null, msg: v, line };
}

/** Parses a capture's text; bad lines are listed, never fatal. */
export function parseCapture(text: string): { messages: CapturedMessage[]; problems: CaptureProblem[] } {
  const messages: CapturedMessage[] = [];
  const problems: CaptureProblem[] = [];
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    try {
      const arr = JSON.parse(text) as unknown[];
      arr.forEach((v, i) => messages.push(unwrap(v, i + 1)));
      return { messages, problems };
    } catch {
      // not one JSON document: fall through to JSONL
    }
  }
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i].trim();
    if (l === '') continue;
    try {
      messages.push(unwrap(JSON.parse(l), i + 1));
    } catch (e) {
      problems.push({ line: i + 1, problem: `not JSON (${(e as Error).message.slice(0, 60)})` });
    }
  }
  return { messages, problems };
}

export async function readCapture(path: string): Promise<{ messages: CapturedMessage[]; problems: CaptureProblem[] }> {
  return parseCapture(await readFile(path, 'utf8'));
}

/** The venue time of a raw message (its `timestamp`, or the first event's in a batch), or null. */
export function sourceTimeOf(msg: unknown): number | null {
  const first = Array.isArray(msg) ? msg[0] : msg;
  if (!first || typeof first !== 'object') return null;
  const t = (first as { timestamp?: unknown; updatedAt?: unknown }).timestamp;
  const n = typeof t === 'string' ? Number(t) : typeof t === 'number' ? t : NaN;
  if (Number.isSafeInteger(n) && n > 0) return n < 1e11 ? n * 1000 : n;
  const u = (first as { updatedAt?: unknown }).updatedAt;
  const ms = typeof u === 'string' ? Date.parse(u) : NaN;
  if (Number.isFinite(ms)) return ms;
  // wallet pushes and REST bodies (`data.updateTimestampMs` / `data.timestampMs`), yes/no market bodies
  const d = (first as { data?: { updateTimestampMs?: unknown; timestampMs?: unknown } }).data;
  const w = d && typeof d === 'object' ? d.updateTimestampMs ?? d.timestampMs : undefined;
  if (typeof w === 'number' && Number.isSafeInteger(w) && w > 0) return w;
  const mk = (first as { market?: { updated_time?: unknown } }).market;
  const yt = mk && typeof mk === 'object' && typeof mk.updated_time === 'string' ? Date.parse(mk.updated_time) : NaN;
  return Number.isFinite(yt) ? yt : null;
}
