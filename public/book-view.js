// The book panel: the depth chart and the level table of one book, live (REST latest, then the
// stream) or as of a scrubbed instant (the `as_of` route). Inside a recorded gap it says so and
// shows no book: the last book before a gap is not what the market looked like during it.

import { api, ApiError, marketRoutes } from './api.js';
import { bookOf, drawDepth } from './depth.js';
import { isoOf } from './history.js';

const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const cell = (v) => (v === undefined || v === null ? '' : esc(v));

/** A wallet book seen as its other outcome: sides swapped, price 1 − p (API.md §3's mirror). */
export function mirrored(snap, label) {
  const flip = (levels) => (levels ?? []).map(([p, s]) => [Number((1 - Number(p)).toFixed(10)), s]);
  return { ...snap, outcome: label, bids: flip(snap.asks), asks: flip(snap.bids) };
}

/** The snapshot to show for `outcome`: coin picks it from `books`, wallet mirrors the stream's book. */
export function viewOf(x, snap, outcome) {
  if (!snap || !outcome || x.family !== 'wallet-prediction' || snap.outcome === outcome) return snap;
  return mirrored(snap, outcome);
}

/**
 * The level table of a snapshot, every level, values as the API sent them (text for yes/no, numbers
 * for the others), so what the page shows can be compared with the API's answer exactly.
 */
export function renderLevels(table, x, snap, outcome) {
  let head,
    rows = [];
  if (!snap) {
    table.innerHTML = '';
    table.dataset.rows = '0';
    return;
  }
  if (x.family === 'yesno-exchange') {
    head = [`YES bid (${snap.units ?? ''})`, 'YES size', `NO bid (${snap.units ?? ''})`, 'NO size'];
    const n = Math.max(snap.yes?.prices?.length ?? 0, snap.no?.prices?.length ?? 0);
    for (let i = 0; i < n; i++) rows.push([snap.yes?.prices?.[i], snap.yes?.sizes?.[i], snap.no?.prices?.[i], snap.no?.sizes?.[i]]);
  } else {
    const book = Array.isArray(snap.books) ? snap.books.find((b) => b.outcome === outcome) : snap;
    head = ['bid size', 'bid', 'ask', 'ask size'];
    const bids = book?.bids ?? [],
      asks = book?.asks ?? [];
    for (let i = 0; i < Math.max(bids.length, asks.length); i++) rows.push([bids[i]?.[1], bids[i]?.[0], asks[i]?.[0], asks[i]?.[1]]);
  }
  table.dataset.rows = String(rows.length);
  table.innerHTML = `<thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((v, i) => `<td class="${i < 2 ? 'b' : 'a'}">${cell(v)}</td>`).join('')}</tr>`)
    .join('')}</tbody>`;
}

/** Draws a snapshot in the panel: depth chart and table; returns the number of levels drawn. */
export function paintBook(els, x, snap, outcome) {
  const shown = viewOf(x, snap, outcome);
  const n = drawDepth(els.canvas, bookOf(x.family, shown, outcome), 'no book for this outcome');
  renderLevels(els.table, x, shown, outcome);
  return n;
}

/** The gap of `gaps` (from coverage, ms) that holds instant `t`, if any. */
export function gapAt(gaps, t) {
  return (gaps ?? []).find((g) => g.start <= t && t < g.end) ?? null;
}

/**
 * The book as of `t`: {state: 'book', snap} with a valid book, {state: 'gap', gap, snap} when a gap
 * was open at `t` (the API's `stale`, or a coverage gap), {state: 'none'} before the first capture.
 */
export async function bookAsOf(x, t, outcome, knownGaps) {
  const r = marketRoutes(x);
  const q = new URLSearchParams({ as_of: String(t) });
  const first = x.m.outcomes?.[0]?.label;
  if (x.family === 'wallet-prediction' && outcome && outcome !== first) q.set('outcome', outcome);
  let snap;
  try {
    snap = (await api(`${r.latest}?${q}`)).data;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { state: 'none', message: e.message };
    throw e;
  }
  let gap = gapAt(knownGaps, t);
  if (snap.stale && !gap) {
    // The answer knows a gap was open; coverage around the instant names its reason.
    const cov = await api(`${r.coverage}&start_time=${t}&end_time=${t + 1}`).catch(() => null);
    const g = cov?.data?.gaps?.[0];
    gap = g
      ? { start: Date.parse(g.start), end: g.end ? Date.parse(g.end) : null, reason: g.reason }
      : { start: null, end: null, reason: 'feed lost' };
  }
  return gap || snap.stale ? { state: 'gap', gap, snap } : { state: 'book', snap };
}

/** The sentence under the chart for an as-of answer. */
export function describe(t, answer) {
  if (answer.state === 'none') return `nothing recorded at or before ${isoOf(t)} UTC`;
  const s = answer.snap;
  const recv = s.receive_time ? isoOf(Date.parse(s.receive_time)) : '?';
  const venueTime = s.source_time ?? s.observed_time;
  if (answer.state === 'gap') {
    const g = answer.gap;
    const span = g.start === null ? '' : ` ${isoOf(g.start)} – ${g.end === null ? 'ongoing' : isoOf(g.end)}`;
    return `inside a gap (${g.reason}${span}): no book at ${isoOf(t)} UTC; the last book before it was received ${recv}`;
  }
  return `as of ${isoOf(t)} UTC · received ${recv}${venueTime ? ` · venue ${isoOf(Date.parse(venueTime))}` : ''} · seq ${s.seq}`;
}

/** The receive time (ms) of the recorded change before (dir < 0) or after (dir > 0) `ref`. */
export async function neighbourChange(x, dir, ref) {
  const r = marketRoutes(x);
  const q = dir < 0 ? `end_time=${ref}&order=desc` : `start_time=${ref + 1}`;
  const body = await api(`${r.snapshots}?${q}&limit=1&include_orderbook=false`);
  const s = body.data[0];
  return s ? Date.parse(s.receive_time) : null;
}
