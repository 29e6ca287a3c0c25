// The pmtape page: asks for an API key once (kept in sessionStorage, so it dies with the tab),
// lists markets by family with their status, and shows three tabs: the selected market (its
// timeline, its book live or as of any instant: market-view.js), the Parquet partitions to download
// (data-tab.js) and a days × markets coverage overview (overview.js). The URL's hash keeps the
// market and the instant (`#family/market/time`), never the key, so a view can be shared.

import { api, KEY } from './api.js';
import { DATASETS, dayOf, duckdbQuery, loadPartitions } from './data-tab.js';
import { label, openMarket, scrubTo, goLive, view, wireMarketView } from './market-view.js';
import { loadFamilyStrip } from './overview.js';

const $ = (id) => document.getElementById(id);
const COINS = ['btc', 'eth', 'bnb'];
const FAMILIES = ['coin', 'wallet-prediction', 'yesno-exchange'];
const state = { markets: [], notes: new Set(), tab: 'market', pendingHash: null, dataSeq: 0 };

function status(text) {
  $('status').textContent = text;
}

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
  if (state.pendingHash !== null) {
    const hash = state.pendingHash;
    state.pendingHash = null;
    if (applyHash(hash)) return;
  }
  if (!view.x && state.markets.length > 0) {
    const live = state.markets.find((x) => ['open', 'active'].includes(x.m.status)) ?? state.markets[0];
    select(live);
  }
}

const FAMILY_TITLES = { coin: 'Coin markets', 'wallet-prediction': 'Wallet prediction', 'yesno-exchange': 'Yes/no exchange' };

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
      if (view.x && view.x.family === family && view.x.id === x.id) b.classList.add('selected');
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

/** `#family/market[/time]`: the view to share (the key never goes into the URL). */
function hashOf(x, asOf) {
  if (!x) return '';
  return `#${x.family}/${encodeURIComponent(x.id)}${asOf === null ? '' : `/${new Date(asOf).toISOString()}`}`;
}

/** {family, id, asOf} of a hash, or null; the time may be ISO 8601 or epoch milliseconds. */
function parseHash(hash) {
  const [family, id, time] = hash.replace(/^#/, '').split('/');
  if (!FAMILIES.includes(family) || !id) return null;
  const asOf = time === undefined || time === '' ? null : /^\d+$/.test(time) ? Number(time) : Date.parse(decodeURIComponent(time));
  if (asOf !== null && !Number.isFinite(asOf)) return null;
  return { family, id: decodeURIComponent(id), asOf };
}

/** Opens the view a hash names; false when its market is not (yet) listed. */
function applyHash(hash) {
  const want = parseHash(hash);
  if (!want) return false;
  const x = state.markets.find((m) => m.family === want.family && m.id === want.id);
  if (!x) {
    status(`market ${want.id} (${want.family}) is not listed for this key`);
    return false;
  }
  showTab('market');
  if (view.x === x) {
    if (want.asOf === null) {
      if (view.asOf !== null) void goLive();
    } else if (want.asOf !== view.asOf) scrubTo(want.asOf);
  } else {
    select(x, want.asOf);
  }
  return true;
}

function select(x, asOf = null) {
  openMarket(x, asOf);
  renderMarkets();
}

view.onChange = () => {
  const h = hashOf(view.x, view.asOf);
  if (location.hash !== h) history.replaceState(null, '', h || location.pathname);
};
window.addEventListener('hashchange', () => applyHash(location.hash));

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll('#tabs [role=tab]')) b.setAttribute('aria-selected', String(b.dataset.tab === tab));
  for (const panel of document.querySelectorAll('[data-panel]')) panel.hidden = panel.dataset.panel !== tab;
  if (tab === 'data') openDataTab();
  if (tab === 'overview') void loadOverview();
}

/** The Data tab opens on the selected market's family and recorded days. */
function openDataTab() {
  const x = view.x;
  if (x) {
    $('data-family').value = x.family;
    $('data-market').value = x.id;
    const from = view.model?.from ?? Date.now() - 6 * 86_400_000,
      to = view.model?.to ?? Date.now();
    $('data-start').value = dayOf(from);
    $('data-end').value = dayOf(to);
  } else if (!$('data-start').value) {
    $('data-start').value = dayOf(Date.now() - 6 * 86_400_000);
    $('data-end').value = dayOf(Date.now());
  }
  void refreshData();
}

function updateQuery() {
  $('data-query').textContent = duckdbQuery({
    origin: location.origin,
    family: $('data-family').value,
    dataset: $('data-dataset').value,
    market: $('data-market').value.trim() || '<market_id>',
    startDate: $('data-start').value,
    endDate: $('data-end').value,
  });
}

async function refreshData() {
  const family = $('data-family').value,
    startDate = $('data-start').value,
    endDate = $('data-end').value;
  const seq = ++state.dataSeq;
  updateQuery();
  $('data-info').textContent = 'loading…';
  try {
    const files = await loadPartitions({ table: $('data-files') }, { family, startDate, endDate }, () => seq === state.dataSeq);
    if (files) $('data-info').textContent = `${files.length} files`;
  } catch (e) {
    if (seq !== state.dataSeq) return;
    $('data-files').innerHTML = '';
    $('data-info').textContent = e.message;
  }
}

async function loadOverview() {
  const root = $('overview-strips');
  root.replaceChildren();
  for (const family of FAMILIES) {
    const h = document.createElement('h3');
    h.textContent = FAMILY_TITLES[family];
    const el = document.createElement('div');
    el.className = 'strip';
    el.dataset.family = family;
    el.textContent = 'loading…';
    root.append(h, el);
    const find = (id) => state.markets.find((m) => m.family === family && m.id === id);
    await loadFamilyStrip(el, family, {
      label: (id) => (find(id) ? label(find(id)) : id),
      windowEnd: (id) => Date.parse(find(id)?.m.end_time ?? find(id)?.m.close_time ?? ''),
      onPick: (id) => {
        const x = find(id);
        if (x) {
          showTab('market');
          select(x);
        }
      },
    });
  }
}

function wireTabs() {
  for (const b of document.querySelectorAll('#tabs [role=tab]')) b.addEventListener('click', () => showTab(b.dataset.tab));
  $('data-dataset').innerHTML = DATASETS.map((d) => `<option>${d}</option>`).join('');
  for (const id of ['data-family', 'data-start', 'data-end']) $(id).addEventListener('change', () => void refreshData());
  for (const id of ['data-dataset', 'data-market']) {
    $(id).addEventListener('change', updateQuery);
    $(id).addEventListener('input', updateQuery);
  }
  $('data-copy').addEventListener('click', () => {
    const text = $('data-query').textContent;
    navigator.clipboard?.writeText(text).then(
      () => {
        $('data-copy').textContent = 'copied';
      },
      () => {
        $('data-copy').textContent = 'select and copy';
      },
    );
  });
}

async function startWithKey() {
  $('key-form').hidden = true;
  $('key-forget').hidden = false;
  status('loading markets…');
  try {
    await loadMarkets();
  } catch (e) {
    if (e.status === 401) {
      sessionStorage.removeItem(KEY);
      askForKey(`key refused: ${e.message}`);
      return;
    }
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
setInterval(() => {
  if (sessionStorage.getItem(KEY)) loadMarkets().catch(() => {});
}, 10_000);

wireMarketView();
wireTabs();
if (location.hash) state.pendingHash = location.hash;
if (sessionStorage.getItem(KEY)) startWithKey();
else askForKey();
