// The import driver: captured messages → the kind's importer → de-duplicated appends. Each record
// gets `origin: 'import'` and an `import_id` (hash of kind, raw message, receive time, market and
// position), so re-importing a file changes nothing. Logs are append-only in receive time: a record
// older than its log's newest cannot be inserted and is counted as `too_old` with an explanation.

import { createHash } from 'node:crypto';
import { openReader, openWriter } from '../storage/index.js';
import type { LogKey, LogWriter } from '../storage/index.js';
import type { BookCheckpoint, Observation } from '../schema/observation.js';
import { MarketBooks } from '../book/book-state.js';
import { readCapture, sourceTimeOf, type CapturedMessage } from './capture.js';
import { merge, reorder, type Timed } from './import-order.js';
import { IMPORTERS } from './venues.js';
import { keyId } from './sink.js';

export interface ImportSummary {
  messages: number;
  /** Records storage acknowledged (fsynced), never merely handed over. */
  written: number;
  duplicates: number;
  too_old: number;
  /** Messages timed more than a day ahead of the wall clock: refused (they would block the log). */
  future: number;
  /** Records storage refused (a held lock, an unencodable value): named in `problems`. */
  failed: number;
  skipped: Record<string, number>;
  problems: string[];
  markets: number;
}

export interface ImportOptions {
  readonly onProgress?: (done: number) => void;
  /** Writer tuning (tests and benches). */
  readonly fsyncIntervalMs?: number;
  /** A `book_checkpoint` after this many imported deltas of a market (config storage policy). */
  readonly checkpointEveryDeltas?: number;
  /** The wall clock future receive times are judged by (tests inject one). */
  readonly now?: () => number;
  /** Messages (and bytes of their JSON) held to restore receive order across all files (import-order.ts). */
  readonly reorderWindow?: { readonly messages: number; readonly bytes: number };
}

/** How far ahead of the wall clock a receive time may be (clock skew between capture and import). */
export const FUTURE_SLACK_MS = 86_400_000;
/** Problem lines kept in the summary; the rest are counted. */
const MAX_PROBLEMS = 100;
const DEFAULT_REORDER_WINDOW = { messages: 20_000, bytes: 8 * 1024 * 1024 };

/** One log being imported into: its writer, the ids it already holds, its tail, its book state. */
interface Target {
  readonly key: LogKey;
  writer: LogWriter | null;
  ids: Set<string>;
  tail: number;
  books: MarketBooks | null;
  deltas: number;
}

function hashOf(kind: string, m: CapturedMessage, recvTs: number): string {
  return createHash('sha256')
    .update(`${kind}\n${recvTs}\n${JSON.stringify(m.msg)}\n${JSON.stringify(m.extra ?? null)}`)
    .digest('hex')
    .slice(0, 24);
}

/** Import ids already present in `key` at or after `fromTs` (ids are only compared there). */
async function existingIds(dataDir: string, key: LogKey, fromTs: number): Promise<Set<string>> {
  const ids = new Set<string>();
  const r = openReader(dataDir, key);
  const pos = await r.seekTime(fromTs).catch(() => null);
  if (!pos) return ids;
  for await (const it of r.read(pos)) if (it.rec.import_id) ids.add(it.rec.import_id);
  return ids;
}

const logName = (k: LogKey): string => `${k.family}/${k.stream}/${k.market}`;

export async function runImport(dataDir: string, kind: string, files: readonly string[], opts: ImportOptions = {}): Promise<ImportSummary> {
  const importer = IMPORTERS[kind];
  if (!importer) throw new Error(`unknown import kind "${kind}" (known: ${Object.keys(IMPORTERS).join(', ')})`);
  const sum: ImportSummary = {
    messages: 0,
    written: 0,
    duplicates: 0,
    too_old: 0,
    future: 0,
    failed: 0,
    skipped: {},
    problems: [],
    markets: 0,
  };
  let unlisted = 0;
  const problem = (line: string): void => {
    if (sum.problems.length < MAX_PROBLEMS) sum.problems.push(line);
    else unlisted++;
  };
  const skip = (why: string): void => {
    sum.skipped[why] = (sum.skipped[why] ?? 0) + 1;
  };
  const now = opts.now ?? Date.now;
  let firstFuture: string | null = null;

  // 1. Read every file as a stream; give each message its receive time (a bare one: its source
  //    time) and put the files together in receive order (logs are append-only in receive time).
  const w = opts.reorderWindow ?? DEFAULT_REORDER_WINDOW;
  const share = Math.max(1, files.length);
  const window = { messages: Math.max(100, Math.floor(w.messages / share)), bytes: Math.max(256 * 1024, Math.floor(w.bytes / share)) };
  async function* timed(f: string, file: number): AsyncGenerator<Timed> {
    let seq = 0;
    try {
      for await (const item of readCapture(f)) {
        if ('problem' in item) {
          problem(`${f}:${item.problem.line}: ${item.problem.problem}`);
          continue;
        }
        const m = item.message;
        sum.messages++;
        const recvTs = m.recv_ts ?? sourceTimeOf(m.msg);
        if (recvTs === null) skip('no receive or source time');
        else if (recvTs > now() + FUTURE_SLACK_MS) {
          sum.future++;
          firstFuture ??= `${f}:${m.line} at ${new Date(recvTs).toISOString()}`;
        } else yield { m, recvTs, seq: seq++, file };
      }
    } catch (e) {
      problem(`${f}: cannot be read (${(e as Error).message})`);
    }
  }
  const ordered = merge(files.map((f, i) => reorder(timed(f, i), window)[Symbol.asyncIterator]()));

  // 2. Normalize in receive order (catalogue diffs depend on the previous state) and append each
  //    record as it comes, skipping ids already present and records older than the log's tail.
  const session = await importer.open(dataDir);
  const every = opts.checkpointEveryDeltas ?? 500;
  const targets = new Map<string, Target | null>();
  const inflight = new Set<Promise<void>>();
  const failedLogs = new Set<string>();
  const refused = (key: LogKey, e: unknown): void => {
    sum.failed++;
    const id = keyId(key);
    if (failedLogs.has(id)) return;
    failedLogs.add(id);
    problem(`${logName(key)}: storage refused record(s): ${(e as Error).message}`);
  };

  const target = async (key: LogKey, fromTs: number): Promise<Target | null> => {
    const id = keyId(key);
    if (targets.has(id)) return targets.get(id)!;
    let t: Target | null = null;
    try {
      const ids = await existingIds(dataDir, key, fromTs);
      const writer = await openWriter(dataDir, key, { fsyncIntervalMs: opts.fsyncIntervalMs ?? 20 });
      t = {
        key,
        writer,
        ids,
        tail: writer.lastRecord()?.recv_ts ?? 0,
        books: key.stream === 'books' ? new MarketBooks() : null,
        deltas: 0,
      };
      sum.markets++;
    } catch (e) {
      failedLogs.add(id);
      problem(
        `${logName(key)}: cannot open its log (${(e as Error).message}); is another pmtape process writing it? Stop it, or import into another --data-dir`,
      );
    }
    targets.set(id, t);
    return t;
  };

  const append = async (t: Target, obs: Observation, checkpoint: boolean): Promise<void> => {
    if (obs.import_id && t.ids.has(obs.import_id)) {
      sum.duplicates++;
      return;
    }
    if (obs.recv_ts < t.tail) {
      sum.too_old++;
      return;
    }
    t.tail = obs.recv_ts;
    const w = t.writer!;
    const p = Promise.resolve()
      .then(() => w.write(obs, checkpoint ? { checkpoint: true } : undefined))
      .then(
        () => void sum.written++,
        (e: unknown) => refused(t.key, e),
      );
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    if (w.backpressure) await w.drained();
  };

  let done = 0;
  try {
    for await (const { m, recvTs } of ordered) {
      const { out, skip: why } = await session.map(m, recvTs);
      if (why) skip(why);
      const base = hashOf(kind, m, recvTs);
      const perKey = new Map<string, number>();
      for (const tg of out) {
        const id = keyId(tg.key);
        const n = perKey.get(id) ?? 0;
        perKey.set(id, n + 1);
        const obs = { ...tg.obs, origin: 'import', import_id: `${base}:${n}` } as Observation;
        const t = await target(tg.key, obs.recv_ts);
        if (!t) {
          sum.failed++;
          continue;
        }
        await append(t, obs, tg.checkpoint === true || obs.type === 'book_checkpoint');
        // Book logs get full-book checkpoints as the recorder writes them (derived, not fabricated:
        // the state the imported records themselves build), so as-of reads stay bounded.
        if (!t.books) continue;
        t.books.apply(obs);
        if (obs.type !== 'book_delta' || ++t.deltas < every) continue;
        const valid = t.books.checkpointBooks();
        if (valid.length === 0) continue;
        t.deltas = 0;
        const cp: BookCheckpoint = {
          type: 'book_checkpoint',
          recv_ts: obs.recv_ts,
          source_ts: null,
          origin: 'import',
          import_id: `${obs.import_id}:cp`,
          units: 'decimal',
          books: valid.map((v) => ({ token_id: v.token_id, bids: [...v.bids], asks: [...v.asks] })),
        };
        await append(t, cp, true);
      }
      opts.onProgress?.(++done);
    }
  } finally {
    await Promise.all([...inflight]);
    for (const t of targets.values())
      await t?.writer?.close().catch((e: Error) => problem(`${logName(t.key)}: closing its log failed (${e.message})`));
  }
  if (sum.future > 0) {
    problem(
      `${sum.future} message(s) have a receive time more than a day ahead of this machine's clock (first: ${firstFuture}) and were not imported: ` +
        "they would block the log for every later import. Fix the capture's recv_ts (milliseconds since 1970) or this machine's clock.",
    );
  }
  if (sum.too_old > 0) {
    problem(
      `${sum.too_old} record(s) are older than what their log already holds and were not imported: logs are ` +
        'append-only in receive time. Import older captures into a fresh data dir (--data-dir), or before recording starts.',
    );
  }
  if (unlisted > 0) sum.problems.push(`...and ${unlisted} more problem(s)`);
  return sum;
}
