// The selected market: its timeline over a range (history.js), the book panel live or as of a
// scrubbed instant (book-view.js), keyboard steps between recorded changes, the last two hours'
// coverage strip, and the live stream that keeps the book current while nothing is scrubbed.

import { api, marketRoutes } from './api.js';
import { drawDepth } from './depth.js';
import { drawTimeline, spansOf, viewOf as coverageWindow } from './timeline.js';
import { drawHistory, instantAt, isoOf, loadHistory } from './history.js';
import { bookAsOf, describe, neighbourChange, paintBook, renderLevels } from './book-view.js';

const $ = (id) => document.getElementById(id);
const COVERAGE_MS = 2 * 3600_000;
const RANGES = { '15m': 900_000, '1h': 3_600_000, '6h': 21_600_000, '24h': 86_400_000, '7d': 604_800_000 };
const FAMILY_TITLES = { coin: 'Coin markets', 'wallet-prediction': 'Wallet prediction', 'yesno-exchange': 'Yes/no exchange' };

/** What is shown; `onChange` is told whenever the market or the instant changes (the URL follows). */
export const view = {
  x: null,
  asOf: null,
  outcome: null,
  model: null,
  book: null,
  updates: 0,
  ws: null,
  wsRetry: 0,
  timers: [],
  historySeq: 0,
  scrubSeq: 0,
  lastFetch: 0,
  dragging: false,
  loadedAt: 0,
  /** The market and instant of the last book asked for (a release where the press was asks nothing). */
  requested: null,
  onChange: () => {},
};

const els = () => ({ canvas: $('depth'), table: $('levels') });

/** The range the timeline covers: the whole recorded life, or the chosen span back from now. */
async function rangeOf(x) {
  const span = RANGES[$('history-range').value];
  const now = Date.now();
  let from, to;
  if (span) {
    from = now - span;
    to = now;
  } else {
    const cov = (await api(marketRoutes(x).coverage)).data;
    const books = cov.datasets?.books;
    if (!books) return null;
    from = Date.parse(books.first_time);
    to = cov.connected ? now : Date.parse(books.last_time) + 1000;
  }
  // A shared view's instant outside the range widens it rather than hiding the cursor.
  if (view.asOf !== null) {
    from = Math.min(from, view.asOf - 1000);
    to = Math.max(to, view.asOf + 1000);
  }
  return { from, to: Math.max(to, from + 10_000) };
}

export async function loadTimeline() {
  const x = view.x,
    seq = ++view.historySeq;
  if (!x) return;
  $('history-info').textContent = '(loading…)';
  try {
    const range = await rangeOf(x);
    if (seq !== view.historySeq) return;
    if (!range) {
      $('history').innerHTML = '<p class="hint">Nothing recorded for this market yet.</p>';
      $('history-info').textContent = '';
      return;
    }
    const model = await loadHistory(x, range.from, range.to);
    if (seq !== view.historySeq) return;
    view.model = model;
    view.loadedAt = Date.now();
    redrawHistory();
    $('history-info').textContent =
      `(${isoOf(model.from).slice(0, 19)} – ${isoOf(model.to).slice(0, 19)} UTC · ${model.points} snapshots at ${model.interval})`;
    $('history').dataset.ready = String(seq);
  } catch (e) {
    if (seq === view.historySeq) $('history-info').textContent = `(timeline unavailable: ${e.message})`;
  }
}

function redrawHistory() {
  if (view.model) drawHistory($('history'), $('history-legend'), view.model, view.asOf);
}

/** The live book: from REST first, then from every stream message, unless an instant is scrubbed. */
export function showBook(snap, how) {
  if (!view.x || view.asOf !== null) return;
  view.book = { state: 'book', snap };
  const n = paintBook(els(), view.x, snap, view.outcome);
  view.updates += 1;
  $('depth').dataset.updates = String(view.updates);
  const t = snap?.receive_time ?? snap?.observed_time ?? '';
  $('depth-info').textContent = n
    ? `(${n} levels, seq ${snap.seq ?? '?'}, ${how} ${String(t).slice(11, 23)}${snap.stale ? ', stale' : ''})`
    : '';
  $('book-state').textContent = 'live: the newest recorded book, kept current by the stream';
}

export async function goLive() {
  const x = view.x;
  view.asOf = null;
  ++view.scrubSeq;
  view.onChange();
  redrawHistory();
  $('book-view').dataset.state = 'live';
  delete $('book-view').dataset.asof;
  try {
    const r = marketRoutes(x);
    const path = x.family === 'wallet-prediction' ? r.latest : `${r.snapshots}?include_orderbook=true&order=desc&limit=1`;
    const body = await api(path);
    const snap = Array.isArray(body.data) ? body.data[0] : body.data;
    if (view.x === x && view.asOf === null) showBook(snap, 'REST');
  } catch (e) {
    if (view.x === x) {
      drawDepth($('depth'), null);
      renderLevels($('levels'), x, null);
      $('depth-info').textContent = `(${e.message})`;
    }
  }
}

/** Shows the book as of `t`; while dragging, fetches at most every 150 ms (the last position wins). */
export function scrubTo(t, final = true) {
  view.asOf = t;
  redrawHistory();
  view.onChange();
  const now = performance.now();
  if (!final && now - view.lastFetch < 150) return;
  view.lastFetch = now;
  void showInstant(t);
}

async function showInstant(t) {
  const x = view.x,
    seq = ++view.scrubSeq;
  view.requested = { x, t };
  $('book-state').textContent = `loading the book as of ${isoOf(t)} UTC…`;
  try {
    const answer = await bookAsOf(x, t, view.outcome, view.model?.gaps);
    if (seq !== view.scrubSeq || view.x !== x) return;
    view.book = answer;
    if (answer.state === 'book') {
      const n = paintBook(els(), x, answer.snap, view.outcome);
      $('depth-info').textContent = `(${n} levels, seq ${answer.snap.seq}, as of ${isoOf(t).slice(11, 23)})`;
    } else {
      drawDepth(
        $('depth'),
        null,
        answer.state === 'gap'
          ? `no book: inside a gap (${answer.gap?.reason ?? 'feed lost'})`
          : 'nothing recorded at or before this instant',
      );
      renderLevels($('levels'), x, null);
      $('depth-info').textContent = `(no book as of ${isoOf(t).slice(11, 23)})`;
    }
    $('book-view').dataset.state = answer.state;
    $('book-view').dataset.asof = String(t);
    // Counts answers shown, so a step that lands on the instant already shown is still seen as done.
    $('book-view').dataset.answers = String(Number($('book-view').dataset.answers ?? 0) + 1);
    $('book-state').textContent = describe(t, answer);
  } catch (e) {
    if (seq === view.scrubSeq) $('book-state').textContent = `book unavailable: ${e.message}`;
  }
}

/** Steps to the previous (dir < 0) or next recorded change of the book. */
export async function step(dir) {
  const x = view.x;
  if (!x) return;
  const t = view.asOf ?? Date.now();
  const shown = view.book?.state === 'book' && view.book.snap?.receive_time ? Date.parse(view.book.snap.receive_time) : null;
  try {
    const at = await neighbourChange(x, dir, dir < 0 ? (shown ?? t + 1) : t);
    if (view.x !== x) return;
    if (at === null) {
      $('book-state').textContent = dir < 0 ? 'no earlier recorded change' : 'no later recorded change (yet)';
      return;
    }
    scrubTo(at);
  } catch (e) {
    $('book-state').textContent = `step failed: ${e.message}`;
  }
}

async function loadCoverage() {
  const x = view.x;
  if (!x) return;
  const to = Date.now(),
    from = to - COVERAGE_MS;
  try {
    const body = await api(`${marketRoutes(x).coverage}&start_time=${from}&end_time=${to}`);
    if (view.x !== x) return;
    const spans = spansOf(body, to);
    const w = coverageWindow(spans, to, COVERAGE_MS);
    const gaps = drawTimeline($('coverage'), $('coverage-legend'), $('gap-list'), spans, w.from, w.to);
    const secs = Math.round((w.to - w.from) / 1000);
    $('coverage-span').textContent = `(last ${secs < 120 ? `${secs} s` : `${Math.round(secs / 60)} min`}, UTC)`;
    $('coverage').dataset.gaps = String(gaps);
  } catch (e) {
    $('coverage').textContent = `coverage unavailable: ${e.message}`;
  }
}

export function label(x) {
  const m = x.m;
  if (x.family === 'yesno-exchange') return m.title ? `${m.ticker} — ${m.title}` : m.ticker;
  const w = m.window ? ` ${m.window}` : '';
  const start = m.start_time ? ` ${String(m.start_time).slice(11, 16)}` : '';
  return `${(x.coin ?? m.coin ?? '').toUpperCase()}${w}${start} · ${x.id}`;
}

/** Opens market `x`, live or as of `asOf` (ms). */
export function openMarket(x, asOf = null) {
  view.x = x;
  view.asOf = asOf;
  view.updates = 0;
  view.model = null;
  view.book = null;
  $('history').innerHTML = '';
  $('history-legend').innerHTML = '';
  delete $('history').dataset.ready;
  // The panel shows only while its tab is the open one.
  $('detail').hidden = document.querySelector('#tabs [aria-selected=true]')?.dataset.tab !== 'market';
  $('detail-title').textContent = label(x);
  const m = x.m;
  const times = [m.start_time ?? m.open_time, m.end_time ?? m.close_time].filter(Boolean).join(' → ');
  $('detail-meta').textContent = `${FAMILY_TITLES[x.family]} · status ${m.status ?? '?'}${times ? ` · ${times}` : ''}`;
  const outcomes = x.family === 'yesno-exchange' ? [] : (m.outcomes ?? []).map((o) => o.label);
  view.outcome = outcomes[0] ?? null;
  $('outcome-select').hidden = outcomes.length === 0;
  $('outcome-select').replaceChildren(...outcomes.map((o) => new Option(o, o)));
  $('depth').dataset.levels = '0';
  for (const timer of view.timers) clearInterval(timer);
  view.timers = [
    setInterval(loadCoverage, 15_000),
    // A live market's timeline grows: redrawn while nothing is scrubbed, every 30 s for short ranges
    // and every 1/200 of the range for long ones (a week's replay is not asked for twice a minute).
    setInterval(() => {
      const span = view.model ? view.model.to - view.model.from : 0;
      if (view.asOf === null && !view.dragging && Date.now() - view.loadedAt >= Math.max(30_000, span / 200)) void loadTimeline();
    }, 30_000),
  ];
  void loadCoverage();
  void loadTimeline();
  view.onChange();
  if (asOf === null) void goLive();
  else scrubTo(asOf);
  subscribe();
}

let nextId = 1;
function subscription(x, op = 'subscribe') {
  const msg = { op, id: nextId++, channel: 'book', family: x.family };
  if (x.family === 'coin') msg.coin = x.coin;
  if (x.family === 'yesno-exchange') msg.ticker = x.id;
  else msg.market_id = x.id;
  return msg;
}

/** One socket for the page; switching markets unsubscribes the old one and subscribes the new. */
function subscribe() {
  const x = view.x;
  if (!x) return;
  if (view.ws && view.ws.readyState === WebSocket.OPEN) {
    if (view.ws.current) view.ws.send(JSON.stringify(subscription(view.ws.current, 'unsubscribe')));
    view.ws.current = x;
    view.ws.send(JSON.stringify(subscription(x)));
    return;
  }
  if (view.ws && view.ws.readyState === WebSocket.CONNECTING) return;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v3/stream?api_key=${encodeURIComponent(sessionStorage.getItem('pmtape.key') ?? '')}`;
  const ws = new WebSocket(url);
  view.ws = ws;
  ws.onopen = () => {
    view.wsRetry = 0;
    $('stream-state').textContent = '· live';
    ws.current = null;
    subscribe();
  };
  ws.onmessage = (ev) => {
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    const cur = view.x;
    if (!cur) return;
    const id = msg.data?.market_id ?? msg.data?.ticker ?? msg.market_id ?? msg.ticker;
    // A book after a gap means the feed is back: the state line says so, not the gap of before.
    if (msg.type === 'book' && id === cur.id) {
      $('stream-state').textContent = '· live';
      showBook(msg.data, 'live');
    } else if (msg.type === 'gap' && (id === undefined || id === cur.id)) {
      $('stream-state').textContent = `· gap: ${msg.reason ?? msg.data?.reason ?? 'feed lost'}`;
      void loadCoverage();
    } else if (msg.type === 'error') $('stream-state').textContent = `· stream error: ${msg.error?.message ?? ''}`;
  };
  ws.onclose = () => {
    if (view.ws !== ws) return;
    view.ws = null;
    $('stream-state').textContent = '· stream closed, retrying';
    view.wsRetry = Math.min(view.wsRetry + 1, 5);
    setTimeout(subscribe, 1000 * 2 ** view.wsRetry);
  };
}

/** Pointer, keyboard and control wiring of the market view (once, at load). */
export function wireMarketView() {
  const host = $('history');
  host.addEventListener('pointerdown', (ev) => {
    const t = instantAt(host, ev);
    if (t === null) return;
    host.setPointerCapture(ev.pointerId);
    view.dragging = true;
    scrubTo(t);
  });
  host.addEventListener('pointermove', (ev) => {
    if (!view.dragging) return;
    const t = instantAt(host, ev);
    if (t !== null) scrubTo(t, false);
  });
  const release = (ev) => {
    if (!view.dragging) return;
    view.dragging = false;
    const t = instantAt(host, ev);
    // A click releases where it pressed: that book is already asked for (asking again would show
    // "loading" over an answer that may already be there). A drag's last throttled move is not.
    if (t !== null && !(view.requested?.x === view.x && view.requested?.t === t)) scrubTo(t);
  };
  host.addEventListener('pointerup', release);
  host.addEventListener('pointercancel', () => {
    view.dragging = false;
  });
  const keys = (ev) => {
    if (ev.key === 'ArrowLeft' || ev.key === 'ArrowRight') {
      ev.preventDefault();
      void step(ev.key === 'ArrowLeft' ? -1 : 1);
    } else if (ev.key === 'Escape' || ev.key === 'l') {
      ev.preventDefault();
      void goLive();
    }
  };
  host.addEventListener('keydown', keys);
  $('book-view').addEventListener('keydown', keys);
  $('step-prev').addEventListener('click', () => void step(-1));
  $('step-next').addEventListener('click', () => void step(1));
  $('go-live').addEventListener('click', () => void goLive());
  $('history-range').addEventListener('change', () => void loadTimeline());
  $('outcome-select').addEventListener('change', () => {
    view.outcome = $('outcome-select').value;
    if (view.asOf !== null) void showInstant(view.asOf);
    else if (view.book?.snap) showBook(view.book.snap, 'REST');
  });
  // The chart is drawn at the element's width; a resized window redraws it.
  window.addEventListener('resize', () => redrawHistory());
}
