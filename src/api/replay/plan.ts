// What a `/v3/replay` request asks for, and where its lines sit: the `types` list parsed and checked
// against the family, the order of lines (receive time, market, seq, type), and the resume token.
// A token is the position of one line, so any client can build it from the last line it read:
// base64url(JSON.stringify([receive_time_ms, market, seq, type])).

import { invalidParameter, PmtapeError } from '../../errors.js';
import type { Family } from '../../schema/observation.js';
import { INTERVAL_MS } from '../../book/interval-grid.js';

export interface SnapshotType {
  /** The type name as requested and written on each line, e.g. `book_snapshot_25_1s`. */
  readonly name: string;
  readonly depth: number;
  readonly intervalMs: number;
}

export interface ReplayTypes {
  readonly book: boolean;
  readonly bookChange: boolean;
  readonly trade: boolean;
  readonly gap: boolean;
  readonly metric: boolean;
  /** `candle_1m`: one line per market and minute once it has ended (replay-candles.ts). */
  readonly candle: boolean;
  /** Sorted by name: lines of one bucket end come out in that order. */
  readonly snapshots: readonly SnapshotType[];
}

const SNAPSHOT_RE = /^book_snapshot_([1-9][0-9]{0,3})_([0-9]+[smh])$/;
const PLAIN = ['book', 'book_change', 'trade', 'gap', 'metric', 'candle_1m'] as const;
const MAX_TYPES = 12;

/** Parses `types` (comma list); every unknown or misplaced name is a 400 naming it. */
export function parseTypes(
  text: string | undefined,
  family: {
    readonly name: Family;
    readonly maxDepth: number;
    /** Families that record metric samples. */ readonly metricFamilies: readonly Family[];
  },
): ReplayTypes {
  const { maxDepth } = family;
  const names = [
    ...new Set(
      (text ?? 'book')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
  if (names.length === 0) throw invalidParameter('types', 'must name at least one type');
  if (names.length > MAX_TYPES) throw invalidParameter('types', `must name at most ${MAX_TYPES} types`);
  const snapshots: SnapshotType[] = [];
  const plain = new Set<string>();
  for (const n of names) {
    if ((PLAIN as readonly string[]).includes(n)) {
      plain.add(n);
      continue;
    }
    const m = SNAPSHOT_RE.exec(n);
    if (!m) {
      throw invalidParameter(
        'types',
        `has an unknown type '${n.slice(0, 60)}'; use book, book_change, book_snapshot_<depth>_<interval>, trade, gap, metric, candle_1m`,
      );
    }
    const depth = Number(m[1]);
    const intervalMs = INTERVAL_MS[m[2]];
    if (intervalMs === undefined)
      throw invalidParameter('types', `has '${n}' with an unknown interval; use one of ${Object.keys(INTERVAL_MS).join(', ')}`);
    if (depth > maxDepth) throw invalidParameter('types', `has '${n}' deeper than ${maxDepth} levels per side`);
    snapshots.push({ name: n, depth, intervalMs });
  }
  if (plain.has('metric') && !family.metricFamilies.includes(family.name)) {
    throw invalidParameter('types', `has 'metric', which is recorded for family ${family.metricFamilies.join(', ')} only`);
  }
  snapshots.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    book: plain.has('book'),
    bookChange: plain.has('book_change'),
    trade: plain.has('trade'),
    gap: plain.has('gap'),
    metric: plain.has('metric'),
    candle: plain.has('candle_1m'),
    snapshots,
  };
}

/** Where a line sits in the replay: the sort key of the merge and the content of a token. */
export interface LineKey {
  /** Receive time (a bucket end for interval snapshots, the start for the opening book state), epoch ms. */
  readonly t: number;
  readonly market: string;
  readonly seq: number;
  readonly type: string;
}

/** Within one (time, market, seq): the order of the lines one record makes. */
function rank(type: string): number {
  switch (type) {
    case 'gap':
      return 0;
    case 'book_change':
      return 1;
    case 'book':
      return 2;
    case 'trade':
      return 3;
    case 'metric':
      return 4;
    default:
      return 5; // interval snapshots never share a seq with a record's own lines
  }
}

const cmpText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function compareKeys(a: LineKey, b: LineKey): number {
  return a.t - b.t || cmpText(a.market, b.market) || a.seq - b.seq || rank(a.type) - rank(b.type) || cmpText(a.type, b.type);
}

export function encodeToken(k: LineKey): string {
  return Buffer.from(JSON.stringify([k.t, k.market, k.seq, k.type])).toString('base64url');
}

const badToken = (): PmtapeError =>
  new PmtapeError(
    'invalid_cursor',
    "Parameter 'after' is not a replay token; pass the 'next' of an end line, or base64url([receive_time_ms, market, seq, type]) of the last line read.",
  );

export function decodeToken(text: string): LineKey {
  if (text.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(text)) throw badToken();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw badToken();
  }
  if (!Array.isArray(v) || v.length !== 4) throw badToken();
  const [t, market, seq, type] = v as unknown[];
  if (!Number.isSafeInteger(t) || typeof market !== 'string' || !Number.isSafeInteger(seq) || typeof type !== 'string') throw badToken();
  return { t: t as number, market, seq: seq as number, type };
}
