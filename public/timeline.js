// Coverage timeline of one market as SVG: recorded spans in green, gaps in a colour per reason
// (hover shows the reason and times). Reads `/v3/coverage` answers tolerantly, because a market
// may have only some datasets, open gaps (no end yet) or nothing recorded in the window.

export const GAP_COLOURS = {
  not_recording: '#8c959f',
  disconnected: '#cf222e',
  sequence_gap: '#bf8700',
  upstream_error: '#8250df',
  stale: '#d4a72c',
  storage_error: '#0550ae',
};

/** Shades of the recorder strip of a merged history, in order of first appearance. */
const SOURCE_COLOURS = ['#0969da', '#8250df', '#1a7f37', '#9a6700', '#bc4c00'];

const colourOf = (r) => (Object.hasOwn(GAP_COLOURS, r) ? GAP_COLOURS[r] : '#cf222e');
const ms = (t) => (t === null || t === undefined ? null : typeof t === 'number' ? t : Date.parse(t));

/**
 * Collects {recorded: [[s, e]], gaps: [{start, end, reason}]} from a coverage answer. Accepts a
 * single object or a list of per-market/per-dataset entries with `intervals`/`recorded` and `gaps`.
 */
export function spansOf(body, now) {
  const recorded = [],
    gaps = [],
    sources = [];
  const visit = (o) => {
    if (!o || typeof o !== 'object') return;
    if (Array.isArray(o)) {
      o.forEach(visit);
      return;
    }
    for (const key of ['intervals', 'recorded']) {
      if (Array.isArray(o[key])) {
        for (const iv of o[key]) {
          const s = ms(iv.start ?? iv.start_time),
            e = ms(iv.end ?? iv.end_time) ?? now;
          if (s !== null && Number.isFinite(s)) recorded.push([s, e]);
        }
      }
    }
    // A history merged from several recorders names the recorder of each interval.
    if (Array.isArray(o.sources)) {
      for (const src of o.sources) {
        const s = ms(src.start),
          e = ms(src.end) ?? now;
        if (s !== null && Number.isFinite(s)) sources.push({ start: s, end: e, recorder: src.recorder ?? null });
      }
    }
    if (Array.isArray(o.gaps)) {
      for (const g of o.gaps) {
        const s = ms(g.start ?? g.start_time),
          e = ms(g.end ?? g.end_time) ?? now;
        if (s !== null && Number.isFinite(s))
          gaps.push({ start: s, end: e, reason: g.reason ?? 'unknown', open: (g.end ?? g.end_time) == null });
      }
    }
    for (const key of ['data', 'datasets', 'markets', 'books', 'metrics', 'catalog']) {
      if (o[key] && typeof o[key] === 'object') visit(o[key]);
    }
  };
  visit(body);
  return sources.length ? { recorded, gaps, sources } : { recorded, gaps };
}

// Reasons come from stored data: escape before they go into markup.
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const iso = (t) => new Date(t).toISOString().replace('T', ' ').slice(0, 19);

/**
 * The span to draw: at most `maxMs` back from `to`, but zoomed in to the first recorded moment so
 * a young recording is not a sliver at the right edge.
 */
export function viewOf(spans, to, maxMs) {
  const starts = [...spans.recorded.map((r) => r[0]), ...spans.gaps.map((g) => g.start)];
  const first = starts.length ? Math.min(...starts) : to - maxMs;
  const span = Math.max(10_000, to - first);
  return { from: Math.max(to - maxMs, to - span * 1.05), to };
}

/** Renders the timeline for [from, to] into `el` and the legend into `legendEl`; returns gap count. */
export function drawTimeline(el, legendEl, listEl, spans, from, to) {
  const W = 1000,
    H = 44,
    bar = { y: 6, h: 22 };
  const x = (t) => ((Math.min(Math.max(t, from), to) - from) / (to - from)) * W;
  const parts = [
    `<svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="coverage timeline">`,
    `<rect x="0" y="${bar.y}" width="${W}" height="${bar.h}" fill="#eaeef2"><title>nothing recorded</title></rect>`,
  ];
  for (const [s, e] of spans.recorded) {
    if (e < from || s > to) continue;
    parts.push(
      `<rect class="rec" x="${x(s)}" y="${bar.y}" width="${Math.max(1, x(e) - x(s))}" height="${bar.h}" fill="#2da44e"><title>recorded ${iso(s)} – ${iso(e)}</title></rect>`,
    );
  }
  // Merged history: a thin strip above the bar, one shade per recorder, says where each interval came from.
  const recorders = [...new Set((spans.sources ?? []).map((s) => s.recorder ?? '?'))];
  for (const src of spans.sources ?? []) {
    if (src.end < from || src.start > to) continue;
    const who = src.recorder ?? '?';
    parts.push(
      `<rect class="src" data-recorder="${esc(who)}" x="${x(src.start)}" y="0" width="${Math.max(1, x(src.end) - x(src.start))}" height="5" fill="${SOURCE_COLOURS[recorders.indexOf(who) % SOURCE_COLOURS.length]}"><title>from recorder ${esc(who)} ${iso(src.start)} – ${iso(src.end)}</title></rect>`,
    );
  }
  const shown = spans.gaps.filter((g) => g.end >= from && g.start <= to);
  for (const g of shown) {
    const colour = colourOf(g.reason);
    parts.push(
      `<rect class="gap" data-reason="${esc(g.reason)}" x="${x(g.start)}" y="${bar.y}" width="${Math.max(2, x(g.end) - x(g.start))}" height="${bar.h}" fill="${colour}"><title>gap: ${esc(g.reason)} ${iso(g.start)} – ${g.open ? 'ongoing' : iso(g.end)}</title></rect>`,
    );
  }
  const clock = to - from < 600_000 ? (t) => iso(t).slice(11, 19) : (t) => iso(t).slice(11, 16);
  for (let i = 0; i <= 4; i++) {
    const t = from + ((to - from) * i) / 4;
    parts.push(`<text x="${Math.min(W - 50, (W * i) / 4)}" y="${H - 2}" font-size="10" fill="#6e7781">${clock(t)}</text>`);
  }
  parts.push('</svg>');
  el.innerHTML = parts.join('');

  const reasons = [...new Set(shown.map((g) => g.reason))];
  legendEl.innerHTML =
    `<span><span class="sw rec"></span> recorded</span>` +
    recorders
      .map((r, i) => `<span><span class="sw" style="background:${SOURCE_COLOURS[i % SOURCE_COLOURS.length]}"></span> from ${esc(r)}</span>`)
      .join('') +
    reasons
      .map(
        (r) =>
          `<span><span class="sw" style="background:${colourOf(r)}"></span> gap: ${esc(r)}${recorders.length ? ' (all recorders)' : ''}</span>`,
      )
      .join('');
  listEl.innerHTML = shown
    .slice(-20)
    .reverse()
    .map((g) => `<li>${esc(g.reason)}: ${iso(g.start)} – ${g.open ? 'ongoing' : iso(g.end)}</li>`)
    .join('');
  return shown.length;
}
