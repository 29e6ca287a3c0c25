// The import driver: captured messages → the kind's importer → de-duplicated appends. Each record
// gets `origin: 'import'` and an `import_id` (hash of kind, raw message, receive time, market and
// position), so re-importing a file changes nothing. Logs are append-only in receive time: a record
// older than its log's newest cannot be inserted and is counted as `too_old` with an explanation.

import { createHash } from 'node:crypto';
import { openReader } from '../storage/index.js';
import type { LogKey } from '../storage/index.js';
import type { BookCheckpoint, Observation } from '../schema/observation.js';
import { MarketBooks } from '../book/book-state.js';
import { readCapture, sourceTimeOf, type CapturedMessage } from './capture.js';
import { IMPORTERS } from '../families/index.js';
import { LogSink, keyId } from './sink.js';

export interface ImportSummary {
  messages: number;
  written: number;
  duplicates: number;
  too_old: number;
  skipped: Record<string, number>;
  problems: string[];
  markets: number;
}

export interface ImportOptions {
  readonly onProgress?: (done: number, total: number) => void;
  /** Writer tuning (tests and benches). */
  readonly fsyncIntervalMs?: number;
  /** A `book_checkpoint` after this many imported deltas of a market (config storage policy). */
  readonly checkpointEveryDeltas?: number;
}

/** Inserts a checkpoint of every valid book after each `every` deltas. */
function withCheckpoints(list: Pending[], every: number): Pending[] {
  const books = new MarketBooks();
  const out: Pending[] = [];
  let deltas = 0;
  for (const p of list) {
    out.push(p);
    books.apply(p.obs);
    if (p.obs.type !== 'book_delta' || ++deltas < every) continue;
    const valid = books.checkpointBooks();
    if (valid.length === 0) continue;
    deltas = 0;
    const cp: BookCheckpoint = {
      type: 'book_checkpoint', recv_ts: p.obs.recv_ts, source_ts: null, origin: 'import', import_id: `${p.obs.import_id}:cp`,
      units: 'decimal', books: valid.map((v) => ({ token_id: v.token_id, bids: [...v.bids], asks: [...v.asks] })),
    };
    out.push({ key: p.key, obs: cp });
  }
  return out;
}

interface Pending {
  readonly key: LogKey;
  readonly obs: Observation;
  readonly checkpoint?: boolean;
}

function hashOf(kind: string, m: CapturedMessage, recvTs: number): string {
  return createHash('sha256').update(`${kind}\n${recvTs}\n${JSON.stringify(m.msg)}\n${JSON.stringify(m.extra ?? null)}`).digest('hex').slice(0, 24);
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

export async function runImport(dataDir: string, kind: string, files: readonly string[], opts: ImportOptions = {}): Promise<ImportSummary> {
  const importer = IMPORTERS[kind];
  if (!importer) throw new Error(`unknown import kind "${kind}" (known: ${Object.keys(IMPORTERS).join(', ')})`);
  const sum: ImportSummary = { messages: 0, written: 0, duplicates: 0, too_old: 0, skipped: {}, problems: [], markets: 0 };
  const skip = (why: string): void => {
    sum.skipped[why] = (sum.skipped[why] ?? 0) + 1;
  };

  // 1. Read every file; give each message its receive time (a bare one: its source time).
  const all: Array<{ m: CapturedMessage; recvTs: number; file: string }> = [];
  for (const f of files) {
    const { messages, problems } = await readCapture(f);
    for (const p of problems) sum.problems.push(`${f}:${p.line}: ${p.problem}`);
    for (const m of messages) {
      const recvTs = m.recv_ts ?? sourceTimeOf(m.msg);
      if (recvTs === null) skip('no receive or source time');
      else all.push({ m, recvTs, file: f });
    }
  }
  sum.messages = all.length + (sum.skipped['no receive or source time'] ?? 0);
  // Stable sort: receive order, file order for ties (logs are append-only in receive time).
  all.sort((a, b) => a.recvTs - b.recvTs);

  // 2. Normalize in receive order (catalogue diffs depend on the previous state).
  const session = await importer.open(dataDir);
  const byKey = new Map<string, Pending[]>();
  let done = 0;
  for (const { m, recvTs } of all) {
    const { out, skip: why } = await session.map(m, recvTs);
    if (why) skip(why);
    const base = hashOf(kind, m, recvTs);
    const perKey = new Map<string, number>();
    for (const t of out) {
      const id = keyId(t.key);
      const n = perKey.get(id) ?? 0;
      perKey.set(id, n + 1);
      const obs = { ...t.obs, origin: 'import', import_id: `${base}:${n}` } as Observation;
      const list = byKey.get(id) ?? [];
      list.push({ key: t.key, obs, checkpoint: t.checkpoint });
      byKey.set(id, list);
    }
    opts.onProgress?.(++done, all.length);
  }

  // 3. Book logs get full-book checkpoints as the recorder writes them (derived, not fabricated:
  //    the state the imported records themselves build), so as-of reads stay bounded.
  const every = opts.checkpointEveryDeltas ?? 500;
  for (const [id, list] of byKey) if (list[0].key.stream === 'books') byKey.set(id, withCheckpoints(list, every));

  // 4. Append per log, skipping ids already present and records older than the log's tail.
  const sink = new LogSink(dataDir, { monotonic: false, writer: { fsyncIntervalMs: opts.fsyncIntervalMs ?? 20 }, onError: (e) => sum.problems.push(e.message) });
  try {
    for (const list of byKey.values()) {
      const key = list[0].key;
      const ids = await existingIds(dataDir, key, list[0].obs.recv_ts);
      const w = await sink.writer(key);
      if (!w) continue;
      let tail = w.lastRecord()?.recv_ts ?? 0;
      sum.markets++;
      for (const p of list) {
        if (p.obs.import_id && ids.has(p.obs.import_id)) {
          sum.duplicates++;
          continue;
        }
        if (p.obs.recv_ts < tail) {
          sum.too_old++;
          continue;
        }
        tail = p.obs.recv_ts;
        void sink.append(key, p.obs, p.checkpoint || p.obs.type === 'book_checkpoint' ? { checkpoint: true } : undefined);
        sum.written++;
      }
    }
  } finally {
    await sink.close();
  }
  if (sum.too_old > 0) {
    sum.problems.push(
      `${sum.too_old} record(s) are older than what their log already holds and were not imported: logs are ` +
        'append-only in receive time. Import older captures into a fresh data dir (--data-dir), or before recording starts.',
    );
  }
  return sum;
}
