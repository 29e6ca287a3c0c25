// A market's history as one picture: best bid, best ask and mid per outcome over a time range, from
// the API's interval snapshots (the replay's `book_snapshot_1_<interval>` lines, which follow the
// `interval` rules of /snapshots for every family: a bucket exists only while the book was valid,
// so gaps are breaks in the lines, never forward-filled), the coverage gaps as shaded bands by
// reason, the market's window and resolution as markers, and wallet metrics as three own lines.

import { api, apiAll, apiLines, marketRoutes } from './api.js';
import { GAP_COLOURS, spansOf } from './timeline.js';

const INTERVALS = [
  ['1s', 1000],
  ['1m', 60_000],
  ['5m', 300_000],
  ['1h', 3_600_000],
];
const MAX_POINTS = 3000;
const OUTCOME_COLOURS = ['#0969da', '#bc4c00'];
const METRIC_STYLE = { chance: ['#8250df', ''], price: ['#1b7c83', '6 3'], last_trade: ['#24292f', '2 3'] };

/** The coarsest grid still giving a few thousand points at most over `spanMs`. */
export function intervalFor(spanMs) {
  for (const iv of INTERVALS) if (spanMs / iv[1] <= MAX_POINTS) return iv;
  return INTERVALS[INTERVALS.length - 1];
}

const num = (v, scale = 1) => (v === undefined || v === null ? null : Number(v) / scale);

/** {outcome: {bid, ask}} of one interval snapshot; each family's book shape, as probabilities. */
export function quotesOf(x, data) {
  const out = {};
  if (x.family === 'yesno-exchange') {
    const scale = data.units === 'cents' ? 100 : 1;
    const yes = num(data.yes?.prices?.[0], scale),
      no = num(data.no?.prices?.[0], scale);
    // Both ladders are bids: a NO bid at q is a YES offer at 1 − q.
    out.yes = { bid: yes, ask: no === null ? null : 1 - no };
    out.no = { bid: no, ask: yes === null ? null : 1 - yes };
    return out;
  }
  const books = Array.isArray(data.books) ? data.books : [data];
  for (const b of books) out[b.outcome] = { bid: num(b.bids?.[0]?.[0]), ask: num(b.asks?.[0]?.[0]) };
  if (x.family === 'wallet-prediction') {
    // The venue prices the first outcome; the other is its mirror (API.md §3), drawn too.
    const first = out[data.outcome];
    const other = (x.m.outcomes ?? []).map((o) => o.label).find((l) => l !== data.outcome);
    if (first && other) out[other] = { bid: first.ask === null ? null : 1 - first.ask, ask: first.bid === null ? null : 1 - first.bid };
  }
  return out;
}

/** The window and resolution of a market as [{t, label, kind}] markers. */
export function markersOf(x) {
  const m = x.m,
    out = [];
  const at = (v) => (v ? Date.parse(v) : NaN);
  const start = at(m.start_time ?? m.open_time),
    end = at(m.end_time ?? m.close_time);
  if (Number.isFinite(start)) out.push({ t: start, label: 'window start', kind: 'start' });
  if (Number.isFinite(end)) out.push({ t: end, label: 'window end', kind: 'end' });
  let winner = m.winning_outcome ?? (m.result ? String(m.result) : null);
  let resolvedAt = at(m.resolved_time);
  if (x.family === 'coin' && m.native?.umaResolutionStatus === 'resolved') {
    // The catalogue's native record: outcome prices "1"/"0" name the winner once resolved.
    try {
      const prices = JSON.parse(m.native.outcomePrices ?? '[]');
      const i = prices.findIndex((p) => Number(p) === 1);
      if (i >= 0) winner = m.outcomes?.[i]?.label ?? winner;
    } catch {
      /* an unreadable native field leaves the winner unnamed */
    }
    resolvedAt = at(
      String(m.native.closedTime ?? '')
        .replace(' ', 'T')
        .replace(/\+00$/, 'Z'),
    );
  }
  if (m.resolution === 'push') winner = 'push';
  if (winner || m.status === 'resolved' || m.status === 'finalized' || m.status === 'settled') {
    const t = Number.isFinite(resolvedAt) ? resolvedAt : end;
    if (Number.isFinite(t)) out.push({ t, label: `resolved${winner ? `: ${winner}` : ''}`, kind: 'resolution' });
  }
  return out;
}

/**
 * Loads the model of [from, to): interval snapshots through the replay, gaps from coverage, and the
 * wallet metrics from the timeseries route (each metric on its own, never merged).
 */
export async function loadHistory(x, from, to) {
  const r = marketRoutes(x);
  const [ivName, ivMs] = intervalFor(to - from);
  const end = Math.min(to, Date.now() - 1000);
  const lines = end > from ? await apiLines(`${r.replay}&types=book_snapshot_1_${ivName}&start_time=${from}&end_time=${end}`) : [];
  const series = new Map();
  for (const line of lines) {
    const t = Date.parse(line.receive_time);
    for (const [outcome, q] of Object.entries(quotesOf(x, line.data))) {
      if (!series.has(outcome)) series.set(outcome, []);
      const mid = q.bid !== null && q.ask !== null ? (q.bid + q.ask) / 2 : null;
      series.get(outcome).push({ t, bid: q.bid, ask: q.ask, mid });
    }
  }
  const coverage = await api(`${r.coverage}&start_time=${from}&end_time=${to}`);
  const metrics = new Map();
  let metricsComplete = true;
  if (x.family === 'wallet-prediction') {
    for (const metric of ['chance', 'price', 'last_trade']) {
      const { items, complete } = await apiAll(`${r.timeseries}?metric=${metric}&start_time=${from}&end_time=${to}&limit=1000`, 5);
      metricsComplete &&= complete;
      metrics.set(
        metric,
        items.map((s) => ({ t: Date.parse(s.time), v: s.value })),
      );
    }
  }
  return {
    from,
    to,
    interval: ivName,
    intervalMs: ivMs,
    series,
    metrics,
    metricsComplete,
    gaps: spansOf(coverage, to).gaps,
    markers: markersOf(x),
    points: lines.length,
  };
}

const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
export const isoOf = (t) => new Date(t).toISOString().replace('T', ' ').slice(0, 23);

/**
 * SVG path through the points, broken wherever points are further apart than `stepMs` (missing
 * buckets) or a recorded gap lies between them: a gap is never bridged by a line.
 */
function pathOf(points, key, stepMs, x, y, gaps) {
  let d = '',
    prevT = -Infinity;
  for (const p of points) {
    const v = p[key];
    if (v === null || !Number.isFinite(v)) {
      prevT = -Infinity;
      continue;
    }
    const broken = p.t - prevT > stepMs || gaps.some((g) => g.start < p.t && g.end > prevT);
    d += `${broken ? 'M' : 'L'}${x(p.t).toFixed(1)},${y(v).toFixed(1)}`;
    prevT = p.t;
  }
  return d;
}

/** Draws the model into `host` (an element the SVG fills); `asOf` is the scrubbed instant or null. */
export function drawHistory(host, legendEl, model, asOf) {
  const W = Math.max(400, Math.round(host.clientWidth || 900)),
    H = 260,
    pad = { l: 44, r: 10, t: 18, b: 22 };
  const { from, to } = model;
  const x = (t) => pad.l + ((Math.min(Math.max(t, from), to) - from) / (to - from)) * (W - pad.l - pad.r);
  const values = [];
  for (const pts of model.series.values()) for (const p of pts) values.push(p.bid, p.ask);
  for (const pts of model.metrics.values()) for (const p of pts) values.push(p.v);
  const finite = values.filter((v) => v !== null && Number.isFinite(v));
  let lo = finite.length ? Math.min(...finite) : 0,
    hi = finite.length ? Math.max(...finite) : 1;
  if (hi - lo < 0.05) {
    lo -= 0.025;
    hi += 0.025;
  }
  lo = Math.max(0, lo - (hi - lo) * 0.05);
  hi = Math.min(1, hi + (hi - lo) * 0.05);
  const y = (v) => pad.t + (1 - (v - lo) / (hi - lo || 1)) * (H - pad.t - pad.b);
  const bottom = H - pad.b;
  const parts = [
    `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="market timeline" data-from="${from}" data-to="${to}" data-plot-left="${pad.l}" data-plot-right="${W - pad.r}" data-points="${model.points}" data-interval="${model.interval}">`,
    `<rect class="plot" x="${pad.l}" y="${pad.t}" width="${W - pad.l - pad.r}" height="${bottom - pad.t}" fill="#fff" stroke="#d0d7de"/>`,
  ];
  for (const g of model.gaps) {
    if (g.end < from || g.start > to) continue;
    const gx = x(g.start),
      gw = Math.max(2, x(g.end) - gx),
      colour = GAP_COLOURS[g.reason] ?? '#cf222e';
    parts.push(
      `<rect class="gap-band" data-reason="${esc(g.reason)}" data-start="${g.start}" data-end="${g.end}" x="${gx.toFixed(1)}" y="${pad.t}" width="${gw.toFixed(1)}" height="${bottom - pad.t}" fill="${colour}" fill-opacity="0.22"><title>gap: ${esc(g.reason)} ${isoOf(g.start)} – ${g.open ? 'ongoing' : isoOf(g.end)}</title></rect>`,
    );
    if (gw > 60) parts.push(`<text x="${(gx + 3).toFixed(1)}" y="${pad.t + 11}" font-size="10" fill="${colour}">${esc(g.reason)}</text>`);
  }
  for (let i = 0; i <= 4; i++) {
    const v = lo + ((hi - lo) * i) / 4;
    parts.push(
      `<line x1="${pad.l}" x2="${W - pad.r}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eaeef2"/><text x="4" y="${(y(v) + 4).toFixed(1)}" font-size="10" fill="#6e7781">${v.toFixed(3)}</text>`,
    );
    const t = from + ((to - from) * i) / 4;
    const label = to - from <= 86_400_000 ? isoOf(t).slice(11, to - from < 600_000 ? 19 : 16) : isoOf(t).slice(5, 16);
    parts.push(
      `<text x="${Math.min(W - 60, Math.max(pad.l, x(t) - 24)).toFixed(1)}" y="${H - 6}" font-size="10" fill="#6e7781">${label}</text>`,
    );
  }
  const outcomes = [...model.series.keys()];
  outcomes.forEach((o, i) => {
    const colour = OUTCOME_COLOURS[i % OUTCOME_COLOURS.length],
      pts = model.series.get(o);
    for (const [kind, width, dash] of [
      ['bid', 1, '3 2'],
      ['ask', 1, '3 2'],
      ['mid', 2, ''],
    ]) {
      parts.push(
        `<path class="series" data-outcome="${esc(o)}" data-kind="${kind}" data-points="${pts.filter((p) => p[kind] !== null).length}" d="${pathOf(pts, kind, model.intervalMs * 1.5, x, y, model.gaps)}" fill="none" stroke="${colour}" stroke-width="${width}" stroke-opacity="${kind === 'mid' ? 1 : 0.6}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
      );
    }
  });
  for (const [metric, pts] of model.metrics) {
    const [colour, dash] = METRIC_STYLE[metric];
    // Samples are irregular: a line joins samples less than a minute (or 20 median steps) apart.
    const steps = pts
      .slice(1)
      .map((p, i) => p.t - pts[i].t)
      .sort((a, b) => a - b);
    const join = Math.max(60_000, 20 * (steps[Math.floor(steps.length / 2)] ?? 0));
    parts.push(
      `<path class="metric" data-metric="${metric}" data-points="${pts.length}" d="${pathOf(pts, 'v', join, x, y, model.gaps)}" fill="none" stroke="${colour}" stroke-width="1.5"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
    );
  }
  for (const m of model.markers) {
    if (m.t < from || m.t > to) continue;
    const mx = x(m.t).toFixed(1),
      colour = m.kind === 'resolution' ? '#1a7f37' : '#57606a';
    parts.push(
      `<line class="marker" data-marker="${m.kind}" x1="${mx}" x2="${mx}" y1="${pad.t}" y2="${bottom}" stroke="${colour}" stroke-dasharray="4 3"/><text x="${mx}" y="${pad.t - 5}" font-size="10" fill="${colour}" text-anchor="middle">${esc(m.label)}</text>`,
    );
  }
  if (asOf !== null && asOf >= from && asOf <= to) {
    parts.push(
      `<line class="cursor" data-time="${asOf}" x1="${x(asOf).toFixed(1)}" x2="${x(asOf).toFixed(1)}" y1="${pad.t}" y2="${bottom}" stroke="#cf222e" stroke-width="1.5"/>`,
    );
  }
  parts.push('</svg>');
  host.innerHTML = parts.join('');

  const legend = outcomes.map(
    (o, i) =>
      `<span><span class="sw" style="background:${OUTCOME_COLOURS[i % 2]}"></span> ${esc(o)}: mid (solid), best bid / ask (dashed)</span>`,
  );
  for (const metric of model.metrics.keys())
    legend.push(`<span><span class="sw" style="background:${METRIC_STYLE[metric][0]}"></span> ${metric}</span>`);
  for (const reason of new Set(model.gaps.filter((g) => g.end >= from && g.start <= to).map((g) => g.reason))) {
    legend.push(
      `<span><span class="sw" style="background:${GAP_COLOURS[reason] ?? '#cf222e'};opacity:.5"></span> gap: ${esc(reason)}</span>`,
    );
  }
  if (!model.metricsComplete) legend.push('<span class="meta">(metrics: first 5,000 samples of the range)</span>');
  legendEl.innerHTML = legend.join('');
}

/** The instant under a pointer event on the drawn SVG, or null outside the plot. */
export function instantAt(host, ev) {
  const svg = host.querySelector('svg');
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  const from = Number(svg.dataset.from),
    to = Number(svg.dataset.to);
  const left = Number(svg.dataset.plotLeft),
    right = Number(svg.dataset.plotRight);
  const px = ((ev.clientX - box.left) / box.width) * Number(svg.getAttribute('width'));
  if (px < left - 4 || px > right + 4) return null;
  return Math.round(from + ((Math.min(Math.max(px, left), right) - left) / (right - left)) * (to - from));
}
