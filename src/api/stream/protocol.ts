// The live stream's wire protocol (API.md §7): parsing and validating client messages, and building
// the server's messages. Validation is as strict as the REST query parser (unknown fields are an
// error) so a typo is reported instead of silently subscribing to something else.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { PmtapeError, invalidParameter } from '../../errors.js';
import { FAMILIES, type Family } from '../../schema/observation.js';
import { familyOf } from '../../families/registry.js';
import { isTimeShaped, parseTimeParam, toIso } from '../../schema/time.js';
export { cursorMarket } from '../query/cursor.js';

/** Where a subscription starts: live only, a time, a snapshots cursor, or after a known seq. */
export type StreamFrom =
  | { readonly kind: 'live' }
  | { readonly kind: 'time'; readonly t: number }
  | { readonly kind: 'cursor'; readonly text: string }
  | { readonly kind: 'seq'; readonly after: number };

export interface StreamRequest {
  readonly op: 'subscribe' | 'unsubscribe';
  readonly id: number | string;
  readonly channel: 'book';
  readonly family: Family;
  /** Coin of the coin-scoped family (lower case); undefined for the others. */
  readonly coin?: string;
  /** The market as the client named it: market id, condition id or slug; the ticker for yes/no. */
  readonly market: string;
  /** Wallet family: which outcome's view (default the first), as the REST `outcome` parameter. */
  readonly outcome?: string;
  readonly from: StreamFrom;
}

export type ParseResult =
  | { readonly ok: true; readonly req: StreamRequest }
  | { readonly ok: false; readonly id: number | string | null; readonly error: PmtapeError };

const COMMON = ['op', 'id', 'channel', 'family'];

/**
 * The fields of a family's book subscription, from its descriptor: the scope (coin), the market id
 * (a ticker family also takes `market_id`), `outcome` where the family has outcome views.
 */
function fieldsOf(family: Family): string[] {
  const d = familyOf(family);
  const scope = d.routes.scope ? [d.routes.scope.param] : [];
  const ids = d.idField === 'ticker' ? ['ticker', 'market_id'] : ['market_id'];
  return [...COMMON, ...scope, ...ids, ...(d.routes.outcomes ? ['outcome'] : []), 'from', 'after_seq'];
}
const FIELDS = Object.fromEntries(FAMILIES.map((f) => [f, fieldsOf(f)])) as Record<Family, string[]>;

/** Longest text accepted in any field: keeps error messages and map keys small. */
const MAX_TEXT = 512;

function text(o: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const v = o[name];
  if (v === undefined) {
    if (required) throw invalidParameter(name, 'is required');
    return undefined;
  }
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT) {
    throw invalidParameter(name, `must be a non-empty string of at most ${MAX_TEXT} characters`);
  }
  return v;
}

function parseFrom(o: Record<string, unknown>): StreamFrom {
  if (o.from !== undefined && o.after_seq !== undefined) {
    throw invalidParameter('from', 'cannot be combined with after_seq (give one resume point)');
  }
  if (o.after_seq !== undefined) {
    const s = o.after_seq;
    if (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0) throw invalidParameter('after_seq', 'must be an integer ≥ 0');
    return { kind: 'seq', after: s };
  }
  const f = o.from;
  if (f === undefined || f === null) return { kind: 'live' };
  if (typeof f === 'number') {
    if (!Number.isSafeInteger(f) || f < 0)
      throw invalidParameter('from', 'must be epoch milliseconds, an ISO 8601 UTC time or a snapshots next_cursor');
    return { kind: 'time', t: f };
  }
  if (typeof f !== 'string' || f.length === 0 || f.length > 4096) {
    throw invalidParameter('from', 'must be epoch milliseconds, an ISO 8601 UTC time or a snapshots next_cursor');
  }
  const t = parseTimeParam(f);
  // A time with a field out of range (2026-02-30) is a bad time, not a cursor to look up.
  if (t === null && isTimeShaped(f)) throw invalidParameter('from', 'is not a real UTC time (check the day of the month and the hour)');
  return t !== null ? { kind: 'time', t } : { kind: 'cursor', text: f };
}

/** Parses one text frame from a client. Never throws: failures come back with the request id, if any. */
export function parseClientMessage(raw: string): ParseResult {
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch {
    return {
      ok: false,
      id: null,
      error: new PmtapeError('invalid_parameter', 'The message is not valid JSON; send one JSON object per frame.'),
    };
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
    return {
      ok: false,
      id: null,
      error: new PmtapeError('invalid_parameter', 'The message must be a JSON object with "op", "id" and "channel".'),
    };
  }
  const o = msg as Record<string, unknown>;
  const rawId = o.id;
  const id =
    (typeof rawId === 'number' && Number.isSafeInteger(rawId)) || (typeof rawId === 'string' && rawId.length > 0 && rawId.length <= 64)
      ? rawId
      : null;
  try {
    if (id === null) throw invalidParameter('id', 'is required: an integer (or a string of at most 64 characters) echoed in the reply');
    if (o.op !== 'subscribe' && o.op !== 'unsubscribe') throw invalidParameter('op', 'must be "subscribe" or "unsubscribe"');
    if (o.channel !== 'book') throw invalidParameter('channel', 'must be "book"');
    if (typeof o.family !== 'string' || !FAMILIES.includes(o.family as Family)) {
      throw invalidParameter('family', `must be one of ${FAMILIES.join(', ')}`);
    }
    const family = o.family as Family;
    for (const k of Object.keys(o)) {
      if (!FIELDS[family].includes(k))
        throw invalidParameter(k, `is not a field of a ${family} book subscription (allowed: ${FIELDS[family].join(', ')})`);
    }
    const d = familyOf(family);
    let market: string;
    // The scope (the coin of the coin family) is lower case, as in REST paths.
    const coin = d.routes.scope ? text(o, d.routes.scope.param, true)!.toLowerCase() : undefined;
    if (d.idField === 'ticker') {
      if (o.ticker !== undefined && o.market_id !== undefined)
        throw invalidParameter('ticker', 'and market_id name the same thing; give one');
      market =
        text(o, o.ticker !== undefined ? 'ticker' : 'market_id', false) ??
        (() => {
          throw invalidParameter('ticker', 'is required');
        })();
    } else {
      market = text(o, 'market_id', true)!;
    }
    const outcome = text(o, 'outcome', false);
    const from = parseFrom(o);
    if (o.op === 'unsubscribe' && from.kind !== 'live')
      throw invalidParameter(o.from !== undefined ? 'from' : 'after_seq', 'only applies to subscribe');
    return { ok: true, req: { op: o.op, id, channel: 'book', family, coin, market, outcome, from } };
  } catch (e) {
    if (e instanceof PmtapeError) return { ok: false, id, error: e };
    throw e;
  }
}

/** The server's error message: the shared REST envelope plus the request id it answers. */
export function errorMessage(id: number | string | null, err: PmtapeError, requestId: string): string {
  return JSON.stringify({
    type: 'error',
    id,
    error: { status: err.status, code: err.code, message: err.message, request_id: requestId },
  });
}

export const subscribedMessage = (id: number | string): string => JSON.stringify({ type: 'subscribed', id });
export const unsubscribedMessage = (id: number | string): string => JSON.stringify({ type: 'unsubscribed', id });

/** A book message: `data` is exactly the REST snapshot object; `seq` repeats data.seq for uniformity. */
export function bookMessage(family: Family, seq: number, data: unknown): string {
  return `{"type":"book","family":${JSON.stringify(family)},"seq":${seq},"data":${JSON.stringify(data)}}`;
}

export interface GapFields {
  readonly family: Family;
  /** `market_id` for coin and wallet, `ticker` for yes/no. */
  readonly idField: 'market_id' | 'ticker';
  readonly id: string;
  readonly reason: string;
  readonly startMs: number;
  readonly endMs: number | null;
  readonly seq: number;
  readonly tokenId?: string;
}

/** A gap message: the recorder lost (or, with `end`, regained) the feed of this market. */
export function gapMessage(g: GapFields): string {
  const m: Record<string, unknown> = { type: 'gap', family: g.family, [g.idField]: g.id, reason: g.reason, start: toIso(g.startMs) };
  if (g.endMs !== null) m.end = toIso(g.endMs);
  if (g.tokenId !== undefined) m.token_id = g.tokenId;
  m.seq = g.seq;
  return JSON.stringify(m);
}

/**
 * A message prepared once for many sockets: its UTF-8 bytes and its complete unmasked WebSocket
 * text frame (RFC 6455 §5.2), so a fan-out to a thousand clients writes one ready buffer each
 * instead of framing the same payload a thousand times.
 */
export interface PreparedMessage {
  readonly text: Buffer;
  readonly frame: Buffer;
}

export function prepareMessage(msg: string): PreparedMessage {
  const text = Buffer.from(msg);
  const n = text.length;
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81; // FIN + text opcode
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  text.copy(frame, head);
  return { text, frame };
}

// Resume points from REST snapshots cursors. The stream does not know the other query parameters
// of the page request, so it checks the cursor's signature (same secret and format as
// src/api/cursor.ts) but not its query digest, and takes its position: an ascending page's `after`.
// The market it was made for travels in the position (`mk`, written by the snapshots route), so a
// cursor of another market (or of no market) is refused as REST refuses it.

const invalidCursor = (why: string): PmtapeError =>
  new PmtapeError('invalid_cursor', `Field 'from' ${why}; pass a snapshots next_cursor exactly as returned, or a time.`);

/** The first seq to stream for a snapshots cursor signed with `secret`, made for `market` (cursorMarket). */
export function cursorStartSeq(secret: Buffer, text: string, market: string): number {
  if (text.length > 4096) throw invalidCursor('is too long');
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{24})$/.exec(text);
  if (!m) throw invalidCursor('is neither a time nor a cursor');
  const given = Buffer.from(m[2], 'base64url');
  const want = createHmac('sha256', secret).update(m[1]).digest().subarray(0, 18);
  if (given.length !== want.length || !timingSafeEqual(given, want)) throw invalidCursor('is a cursor that has been altered');
  let p: unknown;
  try {
    p = (JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as { p?: unknown }).p;
  } catch {
    throw invalidCursor('is a malformed cursor');
  }
  const pos = typeof p === 'object' && p !== null ? (p as Record<string, unknown>) : {};
  const after = pos.after;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < -1) {
    throw invalidCursor('is not an ascending snapshots cursor (a descending page cannot be resumed forward)');
  }
  if (pos.mk !== market)
    throw invalidCursor(
      `is a cursor of another market (or of a page made before cursors named their market; fetch a fresh page of ${market})`,
    );
  return after + 1;
}
