// The pmtape page: asks for an API key once (kept in sessionStorage, so it dies with the tab),
// lists markets by family with their status, and for the selected market draws its coverage
// timeline (gaps coloured by reason) and a depth chart of the latest book, kept live by /v3/stream.

import { bookOf, drawDepth } from './depth.js';
import { drawTimeline, spansOf, viewOf } from './timeline.js';

const KEY = 'pmtape.key';
const $ = (id) => document.getElementById(id);
const COINS = ['btc', 'eth', 'bnb'];
const WINDOW_MS = 2 * 3600_000;
const state = { markets: [], notes: new Set(), selected: null, ws: null, wsRetry: 0, updates: 0, coverageTimer: 0 };

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

async function api(path) {
  const res = await fetch(path, { headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ''}` } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function status(text) { $('status').textContent = text; }

function askForKey(message) {
  $('key-form').hidden = false;
  $('key-forget').hidden = true;
  $('key-error').textContent = message ?? '';
  status('no key');
}

/** Fetches one family's list; a missing coin (404) or a plan without the family (403) is skipped. */
async function listFamily(family, path, extra) {
  try {
    const body = await api(`${path}?limit=500`);
    return body.data.map((m) => ({ family, ...extra, id: m.market_id ?? m.ticker, m }));
  } catch (e) {
    if (e.status === 403) state.notes.add(`${FAMILY_TITLES[family]}: ${e.message}`);
    if (e.status === 404 || e.status === 403) return [];
    throw e;
  }
}

async function loadMarkets() {
  state.notes.clear();
  const wallet = await listFamily('wallet-prediction', '/v3/wallet-prediction/markets', {});
  const coins = [...new Set([...COINS, ...wallet.map((w) => w.m.coin).filter(Boolean)])];
  const perCoin = await Promise.all(coins.map((c) => listFamily('coin', `/v3/${encodeURIComponent(c)}/markets`, { coin: c })));
  const yesno = await listFamily('yesno-exchange', '/v3/yesno-exchange/markets', {});
  state.markets = [...perCoin.flat(), ...wallet, ...yesno];
  renderMarkets();
  status(`${state.markets.length} markets · updated ${new Date().toISOString().slice(11, 19)} UTC`);
  if (!state.selected && state.markets.length > 0) {
    const live = state.markets.find((x) => ['open', 'active'].includes(x.m.status)) ?? state.markets[0];
    select(live);
  }
}

const FAMILY_TITLES = { coin: 'Coin markets', 'wallet-prediction': 'Wallet prediction', 'yesno-exchange': 'Yes/no exchange' };

function label(x) {
  const m = x.m;
  if (x.family === 'yesno-exchange') return m.title ? `${m.ticker} — ${m.title}` : m.ticker;
  const w = m.window ? ` ${m.window}` : '';
  const start = m.start_time ? ` ${String(m.start_time).slice(11, 16)}` : '';
  return `${(x.coin ?? m.coin ?? '').toUpperCase()}${w}${start} · ${x.id}`;
}

function renderMarkets() {
  const root = $('markets');
  root.replaceChildren();
  for (const family of ['coin', 'wallet-prediction', 'yesno-exchange']) {
    const list = state.markets.filter((x) => x.family === family);
    if (list.length === 0) continue;
    const h = document.createElement('h2');
    h.textContent = `${FAMILY_TITLES[family]} (${list.length})`;
    root.append(h);
    for (const x of list) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'market';
      b.dataset.family = family;
      b.dataset.id = x.id;
      if (x.coin) b.dataset.coin = x.coin;
      if (state.selected && state.selected.family === family && state.selected.id === x.id) b.classList.add('selected');
      const name = document.createElement('span');
      name.className = 'id';
      name.textContent = label(x);
      const badge = document.createElement('span');
      badge.className = `badge ${String(x.m.status ?? '').replace(/[^a-z_]/g, '')}`;
      badge.textContent = x.m.status ?? '?';
      b.append(name, badge);
      b.addEventListener('click', () => select(x));
      root.append(b);
    }
  }
  for (const note of state.notes) {
    const p = document.createElement('p');
    p.className = 'hint';
    p.textContent = note;
    root.append(p);
  }
  if (state.markets.length === 0) {
    const p = document.createElement('p');
    p.className = 'hint';
    p.textContent = 'No markets recorded yet: the recorders may still be starting.';
    root.append(p);
  }
}

function latestPath(x) {
  const id = encodeURIComponent(x.id);
  if (x.family === 'wallet-prediction') return `/v3/wallet-prediction/${id}/orderbook/latest`;
  if (x.family === 'yesno-exchange') return `/v3/yesno-exchange/${id}/snapshots?include_orderbook=true&order=desc&limit=1`;
  return `/v3/${encodeURIComponent(x.coin)}/markets/${id}/snapshots?include_orderbook=true&order=desc&limit=1`;
}

function showBook(snap, how) {
  if (!state.selected) return;
  const book = bookOf(state.selected.family, snap);
  const canvas = $('depth');
  const n = drawDepth(canvas, book);
  state.updates += 1;
  canvas.dataset.updates = String(state.updates);
  const t = snap?.receive_time ?? snap?.observed_time ?? '';
  $('depth-info').textContent = n ? `(${n} levels, seq ${snap.seq ?? '?'}, ${how} ${String(t).slice(11, 23)}${snap.stale ? ', stale' : ''})` : '';
}

async function loadCoverage() {
  const x = state.selected;
  if (!x) return;
  const to = Date.now(), from = to - WINDOW_MS;
  const idParam = x.family === 'yesno-exchange' ? 'ticker' : 'market_id';
  try {
    const body = await api(`/v3/coverage?family=${x.family}&${idParam}=${encodeURIComponent(x.id)}&start_time=${from}&end_time=${to}`);
    if (state.selected !== x) return;
    const spans = spansOf(body, to);
    const view = viewOf(spans, to, WINDOW_MS);
    const gaps = drawTimeline($('coverage'), $('coverage-legend'), $('gap-list'), spans, view.from, view.to);
    const secs = Math.round((view.to - view.from) / 1000);
    $('coverage-span').textContent = `(last ${secs < 120 ? `${secs} s` : `${Math.round(secs / 60)} min`}, UTC)`;
    $('coverage').dataset.gaps = String(gaps);
  } catch (e) {
    $('coverage').textContent = `coverage unavailable: ${e.message}`;
  }
}

async function select(x) {
  state.selected = x;
  state.updates = 0;
  renderMarkets();
  $('detail').hidden = false;
  $('detail-title').textContent = label(x);
  const m = x.m;
  const times = [m.start_time ?? m.open_time, m.end_time ?? m.close_time].filter(Boolean).join(' → ');
  $('detail-meta').textContent = `${FAMILY_TITLES[x.family]} · status ${m.status ?? '?'}${times ? ` · ${times}` : ''}`;
  $('depth').dataset.levels = '0';
  clearInterval(state.coverageTimer);
  state.coverageTimer = setInterval(loadCoverage, 15_000);
  loadCoverage();
  try {
    const body = await api(latestPath(x));
    const snap = Array.isArray(body.data) ? body.data[0] : body.data;
    if (state.selected === x) showBook(snap, 'REST');
  } catch (e) {
    if (state.selected === x) { drawDepth($('depth'), null); $('depth-info').textContent = `(${e.message})`; }
  }
  subscribe();
}

let nextId = 1;
function subscription(x, op = 'subscribe') {
  const msg = { op, id: nextId++, channel: 'book', family: x.family };
  if (x.family === 'coin') msg.coin = x.coin;
  if (x.family === 'yesno-exchange') msg.ticker = x.id; else msg.market_id = x.id;
  return msg;
}

/** One socket for the page; switching markets unsubscribes the old one and subscribes the new. */
function subscribe() {
  const x = state.selected;
  if (!x) return;
  if (state.ws && state.ws.readyState === WebSocket.OPEN) {
    if (state.ws.current) state.ws.send(JSON.stringify(subscription(state.ws.current, 'unsubscribe')));
    state.ws.current = x;
    state.ws.send(JSON.stringify(subscription(x)));
    return;
  }
  if (state.ws && state.ws.readyState === WebSocket.CONNECTING) return;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v3/stream?api_key=${encodeURIComponent(sessionStorage.getItem(KEY) ?? '')}`;
  const ws = new WebSocket(url);
  state.ws = ws;
  ws.onopen = () => { state.wsRetry = 0; $('stream-state').textContent = '· live'; ws.current = null; subscribe(); };
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    const cur = state.selected;
    if (!cur) return;
    const id = msg.data?.market_id ?? msg.data?.ticker ?? msg.market_id ?? msg.ticker;
    if (msg.type === 'book' && id === cur.id) showBook(msg.data, 'live');
    else if (msg.type === 'gap' && (id === undefined || id === cur.id)) { $('stream-state').textContent = `· gap: ${msg.reason ?? msg.data?.reason ?? 'feed lost'}`; loadCoverage(); }
    else if (msg.type === 'error') $('stream-state').textContent = `· stream error: ${msg.error?.message ?? ''}`;
  };
  ws.onclose = () => {
    if (state.ws !== ws) return;
    state.ws = null;
    $('stream-state').textContent = '· stream closed, retrying';
    state.wsRetry = Math.min(state.wsRetry + 1, 5);
    setTimeout(subscribe, 1000 * 2 ** state.wsRetry);
  };
}

async function startWithKey() {
  $('key-form').hidden = true;
  $('key-forget').hidden = false;
  status('loading markets…');
  try {
    await loadMarkets();
  } catch (e) {
    if (e.status === 401) { sessionStorage.removeItem(KEY); askForKey(`key refused: ${e.message}`); return; }
    status(`could not load markets: ${e.message}`);
  }
}

$('key-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const key = $('key-input').value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY, key);
  $('key-input').value = '';
  startWithKey();
});
$('key-forget').addEventListener('click', () => {
  sessionStorage.removeItem(KEY);
  location.reload();
});
// Every 10 s: markets open and settle all the time (and right after a first start the catalogue is
// still filling), and the listing is cheap (served from the in-memory catalogue index).
setInterval(() => { if (sessionStorage.getItem(KEY)) loadMarkets().catch(() => {}); }, 10_000);

if (sessionStorage.getItem(KEY)) startWithKey(); else askForKey();
