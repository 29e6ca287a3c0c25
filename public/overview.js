// The Overview tab: per family, a days × markets heat strip of what was recorded, so a self-hoster
// sees at a glance which days are complete and where the gaps are. Rows are the markets recorded
// most recently (coverage list), columns UTC days; each cell sums the market's recorded intervals
// and gaps within that day (per-market coverage, fetched a few at a time).

import { api, apiAll, ApiError } from './api.js';

const DAY = 86_400_000;
export const MAX_ROWS = 60;
export const MAX_DAYS = 14;
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** UTC midnights of the days from `from` through `to`, the last `MAX_DAYS` of them. */
export function daysOf(from, to) {
  const out = [];
  for (let d = Math.floor(from / DAY) * DAY; d <= to; d += DAY) out.push(d);
  return out.slice(-MAX_DAYS);
}

/**
 * Per day: recorded and gap milliseconds and gap reasons, from one coverage answer's data, and on a
 * merged history (`sources`) the milliseconds each recorder is the source of. A gap
 * still open runs to `openUntil`: now while the market is recorded, else its window's end (a
 * recorder that died mid-window left a gap) or its last record (a market that is over is not a gap).
 */
export function dayCells(data, days, openUntil) {
  const clip = (s, e, d) => Math.max(0, Math.min(e, d + DAY) - Math.max(s, d));
  return days.map((d) => {
    let recorded = 0,
      gap = 0;
    const reasons = new Set();
    for (const iv of data.intervals ?? []) recorded += clip(Date.parse(iv.start), Date.parse(iv.end), d);
    for (const g of data.gaps ?? []) {
      const ms = clip(Date.parse(g.start), g.end ? Date.parse(g.end) : openUntil, d);
      if (ms > 0) {
        gap += ms;
        reasons.add(g.reason);
      }
    }
    // A history merged from several recorders: the milliseconds of the day each one is the source of.
    const sources = {};
    for (const src of data.sources ?? []) {
      const ms = clip(Date.parse(src.start), Date.parse(src.end), d);
      const who = src.recorder ?? '?';
      if (ms > 0) sources[who] = (sources[who] ?? 0) + ms;
    }
    const state = recorded + gap === 0 ? 'none' : gap === 0 ? 'complete' : 'partial';
    return { day: d, recorded, gap, reasons: [...reasons], state, ...(Object.keys(sources).length ? { sources } : {}) };
  });
}

/** Cell colour: green when complete, amber to red as the share of gaps grows. */
export function colourOf(cell) {
  if (cell.state === 'unknown') return 'repeating-linear-gradient(45deg, #eaeef2 0 3px, #fff 3px 6px)';
  if (cell.state === 'none') return '#f6f8fa';
  if (cell.state === 'complete') return '#2da44e';
  const share = cell.gap / (cell.gap + cell.recorded);
  return share < 0.01 ? '#9be9a8' : share < 0.1 ? '#d4a72c' : '#cf222e';
}

const pct = (x) => `${(x * 100).toFixed(x > 0.999 && x < 1 ? 2 : 1)}%`;
const dur = (ms) =>
  ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 1000).toFixed(1)} s`;

/** Runs `fn` over `items`, `n` at a time. */
async function pool(items, n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** The end of a gap still open in a coverage answer (see dayCells). */
export function openUntil(data, windowEnd, now) {
  if (data.connected) return now;
  const last = data.datasets?.books ? Date.parse(data.datasets.books.last_time) : now;
  return Math.min(now, Math.max(last, Number.isFinite(windowEnd) ? windowEnd : last));
}

/**
 * Draws one family's strip into `el`; `label(id)` names a market, `windowEnd(id)` is its window's end
 * (ms) when known, `onPick(id)` opens it.
 */
export async function loadFamilyStrip(el, family, { label, windowEnd, onPick }) {
  let list;
  try {
    list = (await apiAll(`/v3/coverage?family=${family}&limit=1000`, 5)).items;
  } catch (e) {
    el.innerHTML = `<p class="hint">${esc(e instanceof ApiError && e.status === 403 ? e.message : `coverage unavailable: ${e.message}`)}</p>`;
    return 0;
  }
  const recorded = list
    .filter((e) => e.datasets?.books)
    .sort((a, b) => b.datasets.books.last_time.localeCompare(a.datasets.books.last_time));
  const rows = recorded.slice(0, MAX_ROWS);
  if (rows.length === 0) {
    el.innerHTML = '<p class="hint">No books recorded yet.</p>';
    return 0;
  }
  const now = Date.now();
  const days = daysOf(
    Math.min(...rows.map((e) => Date.parse(e.datasets.books.first_time))),
    Math.max(...rows.map((e) => Date.parse(e.datasets.books.last_time))),
  );
  const idParam = family === 'yesno-exchange' ? 'ticker' : 'market_id';
  const cells = new Array(rows.length);
  // Two at a time: the server's default limit of expensive requests (coverage is one) per key.
  await pool(rows, 2, async (e, i) => {
    try {
      const body = await api(
        `/v3/coverage?family=${family}&${idParam}=${encodeURIComponent(e.market_id)}&start_time=${days[0]}&end_time=${Math.min(now, days[days.length - 1] + DAY)}`,
      );
      cells[i] = dayCells(body.data, days, openUntil(body.data, windowEnd(e.market_id), now));
    } catch (err) {
      // Unknown is not "nothing recorded": the cell says why it is empty.
      cells[i] = days.map((d) => ({ day: d, recorded: 0, gap: 0, reasons: [], state: 'unknown', error: err.message }));
    }
  });
  const head = days.map((d) => `<th scope="col">${new Date(d).toISOString().slice(5, 10)}</th>`).join('');
  const body = rows
    .map(
      (e, i) =>
        `<tr><th scope="row"><button type="button" class="pick" data-id="${esc(e.market_id)}">${esc(label(e.market_id))}</button></th>${cells[
          i
        ]
          .map((c) => {
            const total = c.recorded + c.gap;
            const title =
              c.state === 'unknown'
                ? `coverage unavailable: ${c.error}`
                : c.state === 'none'
                  ? 'nothing recorded'
                  : `${pct(c.recorded / total)} recorded (${dur(c.recorded)})${
                      c.sources
                        ? ` from ${Object.entries(c.sources)
                            .map(([r, ms]) => `${r} ${dur(ms)}`)
                            .join(', ')}`
                        : ''
                    }${c.gap ? `, gaps ${dur(c.gap)}${c.sources ? ' (all recorders)' : ''}: ${c.reasons.join(', ')}` : ''}`;
            return `<td class="cell" data-state="${c.state}" data-date="${new Date(c.day).toISOString().slice(0, 10)}" data-market="${esc(e.market_id)}"${c.sources ? ` data-recorders="${esc(Object.keys(c.sources).join(','))}"` : ''} style="background:${colourOf(c)}" title="${esc(`${label(e.market_id)} · ${new Date(c.day).toISOString().slice(0, 10)}: ${title}`)}"></td>`;
          })
          .join('')}</tr>`,
    )
    .join('');
  const more =
    recorded.length > rows.length ? `<p class="meta">The ${rows.length} most recently recorded of ${recorded.length} markets.</p>` : '';
  el.innerHTML = `<table class="heat"><thead><tr><th></th>${head}</tr></thead><tbody>${body}</tbody></table>${more}`;
  for (const b of el.querySelectorAll('button.pick')) b.addEventListener('click', () => onPick(b.dataset.id));
  for (const td of el.querySelectorAll('td.cell')) td.addEventListener('click', () => onPick(td.dataset.market));
  return rows.length;
}
