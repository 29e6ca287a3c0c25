// The merge benchmark's gap accounting: the seconds every recorder was down, measured two ways, and
// what tells them apart. `naive` is the day's own gaps (the fixture's, which both copies carry) plus
// the window both recorders were down, as an operator would count them from the outage log. `exact`
// is, per market, the seconds in which no copy held a whole book, each copy read by itself with
// the coverage rule (scanBooks over its own log): what the merged gaps must not exceed. The naive
// figure also counts fixture-gap seconds that a copy did hold: a recorder that restarts inside a
// venue-side gap takes a fresh whole book at once (as a real one does), which ends its gap there.

type Interval = { readonly start: number; readonly end: number };
import { listKeys as listLogKeys, openLogReader, scanBooks } from '../../src/storage/testing.js';

type Span = [number, number];

/** Sorted, disjoint union of spans. */
function union(spans: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const [a, b] of spans.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0])) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

function intersect(x: readonly Span[], y: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const [a, b] of union([...x]))
    for (const [c, d] of union([...y])) if (Math.min(b, d) > Math.max(a, c)) out.push([Math.max(a, c), Math.min(b, d)]);
  return union(out);
}

/** [lo, hi) minus `covered`. */
function complement(covered: readonly Interval[], lo: number, hi: number): Span[] {
  const out: Span[] = [];
  let cur = lo;
  for (const { start, end } of covered) {
    if (start > cur) out.push([cur, Math.min(start, hi)]);
    cur = Math.max(cur, end);
  }
  if (cur < hi) out.push([cur, hi]);
  return union(out);
}

const measure = (s: readonly Span[]): number => union([...s]).reduce((n, [a, b]) => n + b - a, 0);

export interface DownAccount {
  /** The day's own gaps plus the window every recorder was down, within each market's recorded span. */
  readonly naive_ms: number;
  /** Seconds no copy held a whole book, each copy scanned alone. */
  readonly exact_ms: number;
  /** Naive seconds in which some copy held a whole book (a restart's fresh book inside a venue gap). */
  readonly held_in_naive_ms: number;
  /** Exact seconds outside the naive ones (from a copy's last record to the moment it stopped). */
  readonly beyond_naive_ms: number;
  /** The restarts that ended a fixture gap early, per market: [market, seconds]. */
  readonly resyncs: [string, number][];
}

/** Accounts the seconds every copy in `copies` was down, against the `whole` day and the `bothDown` window. */
export async function accountDown(whole: string, copies: readonly string[], bothDown: Span, dayEnd: number): Promise<DownAccount> {
  let naive = 0,
    exact = 0,
    held = 0,
    beyond = 0;
  const resyncs: [string, number][] = [];
  for (const key of await listLogKeys(whole)) {
    if (key.stream !== 'books') continue;
    const w = await scanBooks('whole', await openLogReader(whole, key).view(), dayEnd);
    const cov = w.coverage.covered;
    if (cov.length === 0) continue;
    const [lo, hi] = [cov[0].start, cov[cov.length - 1].end];
    const naiveSpans = intersect(union([...w.coverage.gaps.map((g): Span => [g.start, g.end]), bothDown]), [[lo, hi]]);
    const scans = await Promise.all(copies.map(async (d) => scanBooks(d, await openLogReader(d, key).view(), dayEnd)));
    // The merged day spans from the first copy's first whole book to the last copy's end.
    const all = scans.flatMap((s) => s.coverage.covered);
    const [mlo, mhi] = [Math.min(...all.map((i) => i.start)), Math.max(...all.map((i) => i.end))];
    let downAll: Span[] = [[mlo, mhi]];
    for (const s of scans) downAll = intersect(downAll, complement(s.coverage.covered, mlo, mhi));
    const heldSpans = intersect(naiveSpans, union(scans.flatMap((s) => s.coverage.covered.map((i): Span => [i.start, i.end]))));
    naive += measure(naiveSpans);
    exact += measure(downAll);
    held += measure(heldSpans);
    beyond += measure(downAll) - measure(intersect(downAll, naiveSpans));
    if (measure(heldSpans) > 0) resyncs.push([key.market, Math.round(measure(heldSpans)) / 1000]);
  }
  return { naive_ms: naive, exact_ms: exact, held_in_naive_ms: held, beyond_naive_ms: beyond, resyncs };
}
