// The Data tab: the Parquet partitions a researcher can download for a family and a range of days
// (from /v3/datasets, with sizes and row counts), each downloadable with the key, plus the DuckDB
// query that reads the chosen market from the pulled tree, and the `pmtape pull` line that makes it.

import { apiAll, download } from './api.js';

export const DATASETS = ['book_snapshots', 'book_changes', 'trades', 'metrics', 'gaps', 'catalog'];

const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const sql = (v) => String(v).replace(/'/g, "''");

/** Human size of a byte count. */
export function sizeOf(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} kB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

/**
 * The pull command and DuckDB query for one market's rows of `dataset` between two UTC days
 * (inclusive), run from the folder the tree was pulled into. The glob skips `_` staging files, so it
 * also works on a server's own `data/` folder.
 */
export function duckdbQuery({ origin, family, dataset, market, startDate, endDate }) {
  return [
    `-- pmtape pull ${origin} --family ${family} --dataset ${dataset} --start-date ${startDate} --end-date ${endDate} --out ./parquet`,
    'SELECT *',
    `FROM read_parquet('parquet/family=${family}/dataset=${dataset}/*/[!_]*.parquet', hive_partitioning = true)`,
    `WHERE market_id = '${sql(market)}'`,
    `  AND date BETWEEN '${startDate}' AND '${endDate}'`,
    'ORDER BY receive_time, seq;',
  ].join('\n');
}

/**
 * Lists the partitions into `els.table` and returns them; nothing is drawn once `isCurrent()` says a
 * newer request replaced this one (answers can arrive out of order).
 */
export async function loadPartitions(els, { family, startDate, endDate }, isCurrent = () => true) {
  const q = new URLSearchParams({ family, start_date: startDate, end_date: endDate, limit: '1000' });
  const { items, complete } = await apiAll(`/v3/datasets?${q}`, 20);
  if (!isCurrent()) return null;
  items.sort((a, b) => a.path.localeCompare(b.path));
  const rows = items.map((f, i) => {
    const parts = Object.fromEntries(
      f.path
        .split('/')
        .filter((s) => s.includes('='))
        .map((s) => s.split('=')),
    );
    const range = f.min_time && f.max_time ? `${f.min_time.slice(11, 19)} – ${f.max_time.slice(11, 19)}` : '';
    return (
      `<tr data-path="${esc(f.path)}" data-rows="${f.rows}" data-bytes="${f.bytes}"><td>${esc(parts.dataset ?? '')}</td><td>${esc(parts.date ?? '')}</td>` +
      `<td class="num">${f.rows.toLocaleString('en')}</td><td class="num">${sizeOf(f.bytes)}</td><td>${esc(range)}</td>` +
      `<td><button type="button" class="dl" data-i="${i}" title="${esc(f.path)}">download</button></td></tr>`
    );
  });
  const bytes = items.reduce((s, f) => s + f.bytes, 0),
    total = items.reduce((s, f) => s + f.rows, 0);
  els.table.innerHTML =
    items.length === 0
      ? '<tbody><tr><td class="hint">No partitions for these days yet: a day is compacted into Parquet after it closes (UTC).</td></tr></tbody>'
      : `<thead><tr><th>dataset</th><th>date</th><th>rows</th><th>size</th><th>receive times (UTC)</th><th></th></tr></thead><tbody>${rows.join('')}</tbody>` +
        `<tfoot><tr><td colspan="2">${items.length} files${complete ? '' : ' (first 20,000)'}</td><td class="num">${total.toLocaleString('en')}</td><td class="num">${sizeOf(bytes)}</td><td colspan="2"></td></tr></tfoot>`;
  els.table.dataset.files = String(items.length);
  for (const b of els.table.querySelectorAll('button.dl')) {
    b.addEventListener('click', () => {
      b.disabled = true;
      download(items[Number(b.dataset.i)].path)
        .then(
          () => {
            b.textContent = 'downloaded';
          },
          (e) => {
            b.textContent = `failed: ${e.message}`;
          },
        )
        .finally(() => {
          b.disabled = false;
        });
    });
  }
  return items;
}

/** UTC day of an instant, YYYY-MM-DD. */
export const dayOf = (t) => new Date(t).toISOString().slice(0, 10);
