// The yes/no family's public JSON shapes (API.md §4): its market record and the snapshot of one
// stored book, in the venue's native text and units.

import type { BookShapeOptions } from '../../book/book-model.js';
import type { YesNoMarket } from '../../schema/market.js';
import type { Level, Recorded, YesNoBook } from '../../schema/observation.js';
import { toIso, toIsoOrNull } from '../../schema/time.js';

/** Most levels a yes/no side ever serves (the venue's own maximum). */
export const YESNO_MAX_DEPTH = 100;

/** A yes/no snapshot straight from one stored book: native text and units, never converted. */
export function yesnoSnapshot(ticker: string, rec: Recorded<YesNoBook>, opts: BookShapeOptions = {}): Record<string, unknown> {
  const depth = Math.min(opts.depth ?? YESNO_MAX_DEPTH, YESNO_MAX_DEPTH);
  const side = (l: readonly Level[]): { prices: string[]; sizes: string[] } => {
    const cut = l.slice(0, depth);
    return { prices: cut.map((x) => x[0]), sizes: cut.map((x) => x[1]) };
  };
  const snap: Record<string, unknown> = {
    ticker,
    observed_time: toIso(rec.source_ts ?? rec.recv_ts),
    receive_time: toIso(rec.recv_ts),
    seq: rec.seq,
    units: rec.units,
  };
  if (opts.includeOrderbook) {
    snap.yes = side(rec.yes);
    snap.no = side(rec.no);
  }
  snap.levels = { yes: Math.min(rec.yes.length, YESNO_MAX_DEPTH), no: Math.min(rec.no.length, YESNO_MAX_DEPTH) };
  return snap;
}

/** The yes/no market record of API.md §4. */
export function yesnoMarketRecord(m: YesNoMarket): Record<string, unknown> {
  return {
    ticker: m.ticker,
    event_ticker: m.event_ticker,
    series_ticker: m.series_ticker,
    title: m.title,
    status: m.status,
    open_time: toIsoOrNull(m.open_time),
    close_time: toIsoOrNull(m.close_time),
    result: m.result,
    native: m.native ?? null,
  };
}
