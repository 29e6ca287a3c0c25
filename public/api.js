// The page's door to the API: every request carries the key kept for this tab (sessionStorage), and
// a refusal becomes an ApiError with the envelope's status and code, so views can tell a missing
// market (404) or plan (403) from a broken request.

export const KEY = 'pmtape.key';

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

const auth = () => ({ Authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ''}` });

/**
 * GET a JSON route. A 429 (a free key's per-minute limit, easily met by the overview's per-market
 * requests, or the per-key limit on expensive requests running at once, which says Retry-After: 1)
 * is waited out as its Retry-After says (at most 30 s), up to three times, before it becomes an error.
 */
export async function api(path, retries = 3) {
  const res = await fetch(path, { headers: auth() });
  const body = await res.json().catch(() => null);
  if (res.status === 429 && retries > 0) {
    const wait = Math.min(30, Math.max(1, Number(res.headers.get('retry-after')) || 5));
    await new Promise((r) => setTimeout(r, wait * 1000));
    return api(path, retries - 1);
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** Every item of a paged list route, following next_cursor up to `maxPages` pages. */
export async function apiAll(path, maxPages = 10) {
  const out = [];
  let cursor = null;
  for (let page = 0; page < maxPages; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const body = await api(cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
    out.push(...body.data);
    cursor = body.next_cursor;
    if (!cursor) return { items: out, complete: true };
  }
  return { items: out, complete: false };
}

/**
 * GET an NDJSON route (the replay): the parsed lines. An `error` line (a failure after the stream
 * began) is thrown like an envelope, so a partial answer is never drawn as if it were whole.
 */
export async function apiLines(path) {
  const res = await fetch(path, { headers: auth() });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const lines = (await res.text())
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const last = lines.at(-1);
  if (last?.type === 'error') throw new ApiError(last.error?.status ?? 500, last);
  if (last?.type !== 'end') throw new ApiError(502, { error: { message: 'the replay ended early; try again' } });
  return lines.slice(0, -1);
}

/** Downloads a dataset file with the key (a plain link cannot send it) under its own file name. */
export async function download(path) {
  const res = await fetch(`/v3/datasets/files/${path}`, { headers: auth() }); // listed paths are URL-safe
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = path.split('/').at(-1);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The routes of one market, per family: `x` is a listed market {family, id, coin?}. */
export function marketRoutes(x) {
  const id = encodeURIComponent(x.id);
  const idParam = x.family === 'yesno-exchange' ? 'ticker' : 'market_id';
  const base =
    x.family === 'wallet-prediction'
      ? `/v3/wallet-prediction/${id}`
      : x.family === 'yesno-exchange'
        ? `/v3/yesno-exchange/${id}`
        : `/v3/${encodeURIComponent(x.coin)}/markets/${id}`;
  return {
    idParam,
    latest: `${base}/orderbook/latest`,
    snapshots: `${base}/snapshots`,
    timeseries: `${base}/timeseries`,
    coverage: `/v3/coverage?family=${x.family}&${idParam}=${id}`,
    replay: `/v3/replay?family=${x.family}&${idParam}=${id}`,
  };
}
