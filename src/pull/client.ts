// The HTTP side of `pmtape pull`: one GET with the key, classified into what the caller does next
// (use it, wait and retry, or give up naming the reason), the retry policy (429 waits for
// Retry-After, transient network and 5xx errors back off a bounded number of times), and the
// `/v3/datasets` listing followed through `next_cursor`.

export interface ClientOptions {
  /** Base URL of the server, e.g. `http://127.0.0.1:8080` (no `/v3`). */
  readonly baseUrl: string;
  readonly key: string | null;
  /** Retries of transient failures (network errors, 5xx, a cut transfer) per request. */
  readonly retries: number;
  /** Retries after 429 per request (each waits for Retry-After). */
  readonly rateLimitRetries: number;
  /** A transfer or listing page with no byte for this long counts as a transient failure. */
  readonly idleTimeoutMs: number;
  /** Bytes all listing pages together may take (a hostile server's endless body stops here). */
  readonly maxListingBytes?: number;
  /** Listing pages followed at most (a hostile server's endless fresh cursors stop here). */
  readonly maxListingPages?: number;
  readonly signal?: AbortSignal;
}

/** A failure that will not go away by asking again (401/403/404, a lying server, a bad path). */
export class FatalError extends Error {
  override readonly name = 'FatalError';
}

/** A failure worth retrying after `waitMs` (429) or after a backoff (network, 5xx). */
export class TransientError extends Error {
  override readonly name = 'TransientError';
  constructor(
    message: string,
    readonly waitMs: number | null = null,
  ) {
    super(message);
  }
}

/** The longest Retry-After honoured; a server asking for more is waited on this long and retried. */
const MAX_RETRY_AFTER_MS = 120_000;

/** Retry-After as seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const s = header.trim();
  const ms = /^\d+$/.test(s) ? Number(s) * 1000 : Date.parse(s) - now;
  if (!Number.isFinite(ms)) return null;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** The backoff before the `attempt`-th retry (1-based): 0.5 s doubling to 8 s, ±20 % jitter. */
export const backoffMs = (attempt: number): number => Math.min(500 * 2 ** (attempt - 1), 8000) * (0.8 + Math.random() * 0.4);

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((res, rej) => {
    if (signal?.aborted) return rej(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      res();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      rej(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** The server's error sentence from the API's envelope, or the start of whatever it sent. */
async function reason(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
    if (e?.message) return `HTTP ${res.status}${e.code ? ` ${e.code}` : ''}: ${e.message}`;
  } catch {
    // not the API's envelope (a proxy, a hostile server): show its start
  }
  return `HTTP ${res.status}${text ? `: ${text.slice(0, 200).replace(/\s+/g, ' ')}` : ''}`;
}

/**
 * GET `url` with the key and `headers`. Returns the response for 2xx and for statuses listed in
 * `pass`; throws TransientError for network errors, 5xx and 429, FatalError for any other status.
 */
export async function get(
  o: ClientOptions,
  url: string,
  headers: Record<string, string> = {},
  pass: readonly number[] = [],
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { ...(o.key ? { authorization: `Bearer ${o.key}` } : {}), 'accept-encoding': 'identity', ...headers },
      // Not followed: the key would go along to wherever the server points (see the 3xx below).
      redirect: 'manual',
      signal: o.signal,
    });
  } catch (e) {
    if (o.signal?.aborted) throw e;
    throw new TransientError(networkMessage(e));
  }
  if ((res.status >= 200 && res.status < 300) || pass.includes(res.status)) return res;
  if (res.status >= 300 && res.status < 400) {
    await res.arrayBuffer().catch(() => undefined);
    throw new FatalError(
      `HTTP ${res.status}: the server redirects to ${res.headers.get('location') ?? '(no Location)'}; pull follows no redirects, pass the final URL`,
    );
  }
  const why = await reason(res);
  if (res.status === 429) throw new TransientError(why, retryAfterMs(res.headers.get('retry-after')) ?? 1000);
  if (res.status >= 500) throw new TransientError(why);
  if (res.status === 401 && !o.key) throw new FatalError(`${why} (no key given: pass --key or set PMTAPE_KEY)`);
  throw new FatalError(why);
}

/** `fetch failed` says little: name the cause (ECONNREFUSED, ECONNRESET, "other side closed"). */
export function networkMessage(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const cause = err.cause?.code ?? err.cause?.message;
  return cause ? `${err.message} (${cause})` : String(err.message ?? e);
}

/**
 * Runs `attempt` until it succeeds, retrying TransientErrors: 429s up to `rateLimitRetries` times
 * after their Retry-After, others up to `retries` times with backoff. `onRetry` hears each one.
 */
export async function withRetries<T>(
  o: ClientOptions,
  attempt: () => Promise<T>,
  onRetry?: (why: string, waitMs: number) => void,
): Promise<T> {
  let transient = 0;
  let limited = 0;
  for (;;) {
    try {
      return await attempt();
    } catch (e) {
      if (!(e instanceof TransientError) || o.signal?.aborted) throw e;
      let wait: number;
      if (e.waitMs !== null) {
        if (++limited > o.rateLimitRetries) throw new FatalError(`${e.message} (still rate limited after ${o.rateLimitRetries} waits)`);
        wait = e.waitMs;
      } else {
        if (++transient > o.retries) throw new TransientError(`${e.message} (gave up after ${o.retries} retries)`);
        wait = backoffMs(transient);
      }
      onRetry?.(e.message, wait);
      await sleep(wait, o.signal);
    }
  }
}

/** One entry of `/v3/datasets` as the server sent it (checked by the caller). */
export interface ListedFile {
  readonly path: unknown;
  readonly bytes: unknown;
  readonly sha256: unknown;
  readonly rows?: unknown;
}

export interface ListFilters {
  readonly family?: string;
  readonly dataset?: string;
  readonly startDate?: string;
  readonly endDate?: string;
}

/** Defaults of the listing caps: far above any real server's listing (1000 entries are ~0.3 MB a page). */
export const DEFAULT_MAX_LISTING_BYTES = 256 * 1024 * 1024;
export const DEFAULT_MAX_LISTING_PAGES = 10_000;

/**
 * One listing page's JSON, read as a stream so that neither an endless body (past `budget` bytes)
 * nor a stall (no byte for `idleTimeoutMs`, headers included) holds pull for long.
 */
async function listingPage(
  o: ClientOptions,
  url: URL,
  budget: number,
): Promise<{ body: { data?: unknown; next_cursor?: unknown }; bytes: number }> {
  const idle = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, idle.signal]) : idle.signal;
  let timer = setTimeout(() => idle.abort(), o.idleTimeoutMs);
  const stalled = (): TransientError =>
    new TransientError(`the listing ${url.pathname} sent no data for ${o.idleTimeoutMs} ms (--idle-timeout)`);
  try {
    let res: Response;
    try {
      res = await get({ ...o, signal }, url.href, { accept: 'application/json' });
    } catch (e) {
      if (idle.signal.aborted && !o.signal?.aborted) throw stalled();
      throw e;
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of (res.body ?? []) as AsyncIterable<Uint8Array>) {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), o.idleTimeoutMs);
        bytes += chunk.length;
        if (bytes > budget) {
          await res.body?.cancel().catch(() => undefined);
          throw new FatalError(
            `the listing ${url.pathname} is larger than ${o.maxListingBytes ?? DEFAULT_MAX_LISTING_BYTES} bytes in all: is ${o.baseUrl} a pmtape server? (raise --max-listing-bytes if it is)`,
          );
        }
        chunks.push(Buffer.from(chunk));
      }
    } catch (e) {
      if (e instanceof FatalError || o.signal?.aborted) throw e;
      if (idle.signal.aborted) throw stalled();
      throw new TransientError(`the listing ${url.pathname} was cut (${networkMessage(e)})`);
    }
    try {
      return { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: unknown; next_cursor?: unknown }, bytes };
    } catch (e) {
      throw new TransientError(`the listing ${url.pathname} was cut or is not JSON (${(e as Error).message})`);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Every file `/v3/datasets` lists under the filters, following `next_cursor` to the end. */
export async function listDatasets(
  o: ClientOptions,
  f: ListFilters,
  onRetry?: (why: string, waitMs: number) => void,
): Promise<ListedFile[]> {
  const base = new URL('v3/datasets', o.baseUrl.endsWith('/') ? o.baseUrl : `${o.baseUrl}/`);
  for (const [k, v] of [
    ['family', f.family],
    ['dataset', f.dataset],
    ['start_date', f.startDate],
    ['end_date', f.endDate],
  ] as const) {
    if (v !== undefined) base.searchParams.set(k, v);
  }
  base.searchParams.set('limit', '1000');
  const out: ListedFile[] = [];
  const seen = new Set<string>();
  const maxBytes = o.maxListingBytes ?? DEFAULT_MAX_LISTING_BYTES;
  const maxPages = o.maxListingPages ?? DEFAULT_MAX_LISTING_PAGES;
  let cursor: string | null = null;
  let used = 0;
  let pages = 0;
  do {
    if (++pages > maxPages) {
      throw new FatalError(
        `${base.pathname} still had a next_cursor after ${maxPages} pages: is ${o.baseUrl} a pmtape server? (raise --max-listing-pages if it is)`,
      );
    }
    const url = new URL(base);
    if (cursor) url.searchParams.set('cursor', cursor);
    const { body, bytes } = await withRetries(o, () => listingPage(o, url, maxBytes - used), onRetry);
    used += bytes;
    if (!Array.isArray(body.data) || !(body.next_cursor === null || typeof body.next_cursor === 'string')) {
      throw new FatalError(`${url.pathname} did not answer {"data": [...], "next_cursor": ...}: is ${o.baseUrl} a pmtape server?`);
    }
    out.push(...(body.data as ListedFile[]));
    cursor = body.next_cursor;
    if (cursor !== null) {
      if (seen.has(cursor)) throw new FatalError(`${url.pathname} repeated a cursor: the listing would never end`);
      seen.add(cursor);
    }
  } while (cursor !== null);
  return out;
}
