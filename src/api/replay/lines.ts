// The NDJSON lines of one market's log in a replay, in line order (receive time, seq, type): a
// books log gives gap, book_change, book, trade and interval-snapshot lines; a metrics log gives
// metric lines. Lines at or before the resume token are made (state must be rebuilt) but not sent.

import type { Recorded } from '../../schema/observation.js';
import { toIso, toIsoOrNull } from '../../schema/time.js';
import type { LogReader } from '../../storage/index.js';
import { IntervalSampler, replayIso, type ReplayBook, type ReplayMarket, type Sample } from '../../book/replay-book.js';
import { marketRecords, recordAtOrAfter } from './cursor.js';
import { alignUp } from '../../book/interval-grid.js';
import { GAP_LOOKAHEAD_MS, GapLookahead, readingAhead } from '../../book/gap-lookahead.js';
import { compareKeys, type LineKey, type ReplayTypes } from './plan.js';

/** One output line: its position and its JSON text (without the newline). */
export interface ReplayLine extends LineKey {
  readonly text: string;
}

export interface SourceRequest {
  readonly market: ReplayMarket;
  readonly reader: LogReader;
  readonly types: ReplayTypes;
  /** Levels per side of `book` lines (default all). */
  readonly depth: number | undefined;
  /** The request's start_time: the opening `book_change` state is written at it. */
  readonly start: number;
  /** Emit lines from this time on (≥ start; later when resuming); the log is warmed up before it. */
  readonly from: number;
  readonly end: number;
  /** Interval snapshots end no later than this (not after now, nor past what was recorded). */
  readonly sampleStop: number;
  /** First receive time of the log: no bucket starts before the first capture. */
  readonly firstRecv: number;
  /** Resume token: lines at or before it are not sent. */
  readonly after: LineKey | null;
}

function lineText(m: ReplayMarket, type: string, seq: number, recvMs: number, sourceTs: number | null, data: unknown): string {
  return lineOf(m, type, seq, recvMs, sourceTs, JSON.stringify(data));
}

/** `{"type":...,"family":...,"<idField>":...,"seq":` per market and type: the same on every line. */
const HEADS = new WeakMap<ReplayMarket, Map<string, string>>();

function headOf(m: ReplayMarket, type: string): string {
  let byType = HEADS.get(m);
  if (!byType) HEADS.set(m, (byType = new Map<string, string>()));
  let head = byType.get(type);
  if (head === undefined)
    byType.set(type, (head = `{"type":${JSON.stringify(type)},"family":"${m.family}","${m.idField}":${JSON.stringify(m.id)},"seq":`));
  return head;
}

/** A line around `data` already serialized: the same text as JSON.stringify of the whole line. */
function lineOf(m: ReplayMarket, type: string, seq: number, recvMs: number, sourceTs: number | null, dataText: string): string {
  const src = sourceTs === null ? 'null' : `"${replayIso.format(sourceTs)}"`;
  return `${headOf(m, type)}${seq},"receive_time":"${replayIso.format(recvMs)}","source_time":${src},"data":${dataText}}`;
}

/**
 * A source hands out its lines in batches of about this many characters: one await per batch, not
 * per line. Small on purpose: a line waiting in a batch may outlive a young-generation collection,
 * and at 32 KiB per source the copying of such survivors cost more than the awaits saved.
 */
const BATCH_CHARS = 4 * 1024;

/** Collects a source's lines (those after the resume token) into batches. */
class Batcher {
  out: ReplayLine[] = [];
  private chars = 0;
  constructor(private readonly after: LineKey | null) {}

  add(l: ReplayLine): void {
    if (this.after !== null && compareKeys(l, this.after) <= 0) return;
    this.out.push(l);
    this.chars += l.text.length;
  }

  /** The batch when it is full (or `force` and not empty), else null. */
  take(force = false): ReplayLine[] | null {
    if (this.chars < BATCH_CHARS && !(force && this.out.length > 0)) return null;
    const b = this.out;
    this.out = [];
    this.chars = 0;
    return b;
  }
}

/** Lines of one market's books log, in batches. */
export async function* bookLines(req: SourceRequest): AsyncGenerator<ReplayLine[]> {
  const { market: m, types } = req;
  const book = m.newBook();
  const ahead = new GapLookahead();
  const samplers = types.snapshots.map((s) => ({
    name: s.name,
    sampler: new IntervalSampler(
      s.intervalMs,
      s.depth,
      Math.max(alignUp(Math.max(req.start, req.firstRecv), s.intervalMs), req.from),
      req.sampleStop,
      ahead,
    ),
  }));
  const due: { name: string; s: Sample }[] = [];
  const sampleLines = (t: number, spoiledFrom = Infinity): ReplayLine[] => {
    for (const { name, sampler } of samplers) {
      const out: Sample[] = [];
      sampler.advance(t, book, out, spoiledFrom);
      for (const s of out) due.push({ name, s });
    }
    if (due.length === 0) return [];
    const lines = due.map(({ name, s }) => ({
      t: s.bucketEnd,
      market: m.id,
      seq: s.seq,
      type: name,
      text: lineText(m, name, s.seq, s.bucketEnd, null, s.data),
    }));
    due.length = 0;
    return lines.sort(compareKeys);
  };
  const batch = new Batcher(req.after);
  let opened = req.from > req.start; // a resumed replay warmed up later than start: its opening state was sent before
  // Interval samples read GAP_LOOKAHEAD_MS past the range for gaps noticed late; those records make no line.
  const chunks = marketRecords(req.reader, {
    from: req.from,
    end: samplers.length > 0 ? req.end + GAP_LOOKAHEAD_MS : req.end,
    warmUp: true,
  });
  for await (const chunk of samplers.length > 0 ? lookedAhead(chunks, ahead, req.end) : chunks) {
    for (let i = 0; i < chunk.length; i++) {
      const rec = chunk.record(i);
      if (rec.recv_ts < req.from) {
        book.apply(rec); // warm-up: state only
        continue;
      }
      const t = Math.floor(rec.recv_ts);
      if (!opened) {
        opened = true;
        const state = types.bookChange && book.lastSeq >= 0 ? book.state() : null;
        if (state)
          batch.add({
            t: req.start,
            market: m.id,
            seq: book.lastSeq,
            type: 'book_change',
            text: lineText(m, 'book_change', book.lastSeq, req.start, null, state),
          });
      }
      if (samplers.length > 0) for (const l of sampleLines(t, rec.type === 'gap' ? rec.start_ts : Infinity)) batch.add(l);
      const wasValid = book.valid();
      const changed = book.apply(rec);
      for (const { sampler } of samplers) sampler.noteApplied(wasValid, book);
      recordLines(req, book, rec, changed, t, batch);
      const full = batch.take();
      if (full) yield full;
    }
  }
  if (samplers.length > 0) {
    // A gap written after the range (a recorder's restart) may still spoil its last buckets.
    const next = await recordAtOrAfter(req.reader, req.end);
    for (const l of sampleLines(Infinity, next?.type === 'gap' ? next.start_ts : Infinity)) batch.add(l);
  }
  const last = batch.take(true);
  if (last) yield last;
}

/** One record at a time: what a chunk is (RecordChunk's shape), so the loop above serves both. */
interface OneRecord {
  readonly length: number;
  record(i: number): Recorded;
}

/** The chunks' records one by one, each once the records GAP_LOOKAHEAD_MS after it were noted; none from `end` on. */
async function* lookedAhead(
  chunks: AsyncIterable<{ readonly length: number; record(i: number): Recorded }>,
  ahead: GapLookahead,
  end: number,
): AsyncGenerator<OneRecord> {
  async function* records(): AsyncGenerator<Recorded> {
    for await (const c of chunks) for (let i = 0; i < c.length; i++) yield c.record(i);
  }
  for await (const rec of readingAhead(records(), (r) => r, ahead)) {
    if (rec.recv_ts >= end) return;
    yield { length: 1, record: () => rec };
  }
}

/** The lines one record makes, in rank order: gap, book_change, book, trade. */
function recordLines(req: SourceRequest, book: ReplayBook, rec: Recorded, changed: readonly string[], t: number, out: Batcher): void {
  const { market: m, types } = req;
  const push = (type: string, data: unknown): void => {
    out.add({ t, market: m.id, seq: rec.seq, type, text: lineText(m, type, rec.seq, rec.recv_ts, rec.source_ts, data) });
  };
  if (rec.type === 'gap') {
    if (types.gap) {
      const data: Record<string, unknown> = { reason: rec.reason, start: toIso(rec.start_ts), end: toIsoOrNull(rec.end_ts) };
      if (rec.token_id !== undefined) data.token_id = rec.token_id;
      if (rec.detail !== undefined) data.detail = rec.detail;
      push('gap', data);
    }
    return;
  }
  if (types.bookChange) {
    const c = book.changes(rec, changed);
    if (c) push('book_change', c);
  }
  if (types.book) {
    const text = book.snapshotText(rec, changed, req.depth);
    if (text !== null)
      out.add({ t, market: m.id, seq: rec.seq, type: 'book', text: lineOf(m, 'book', rec.seq, rec.recv_ts, rec.source_ts, text) });
  }
  if (types.trade && rec.type === 'trade') {
    push('trade', {
      token_id: rec.token_id,
      outcome: book.outcome(rec.token_id),
      price: Number(rec.price),
      size: rec.size === undefined ? null : Number(rec.size),
      side: rec.side ?? null,
    });
  }
}

/** Lines of one market's metrics log (wallet-prediction: chance, price, last_trade samples), in batches. */
export async function* metricLines(req: SourceRequest): AsyncGenerator<ReplayLine[]> {
  const m = req.market;
  const batch = new Batcher(req.after);
  for await (const chunk of marketRecords(req.reader, { from: req.from, end: req.end, warmUp: false })) {
    for (let i = 0; i < chunk.length; i++) {
      const rec = chunk.record(i);
      if (rec.type !== 'metric') continue;
      batch.add({
        t: Math.floor(rec.recv_ts),
        market: m.id,
        seq: rec.seq,
        type: 'metric',
        text: lineText(m, 'metric', rec.seq, rec.recv_ts, rec.source_ts, { metric: rec.metric, outcome: rec.outcome, value: rec.value }),
      });
      const full = batch.take();
      if (full) yield full;
    }
  }
  const last = batch.take(true);
  if (last) yield last;
}
