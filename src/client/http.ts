// Transport of the pmtape client: one GET with the key, `429` waited out (Retry-After) and retried,
// any other non-2xx turned into a PmtapeError from the server's error envelope, and an NDJSON body
// read line by line. Self-contained (Node 20's global fetch): nothing here imports the server.

/** An error answered by the server (its envelope), or a transport failure of the client (status 0). */
export class PmtapeError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  constructor(status: number, code: string, message: string, requestId: string | null) {
    super(message);
    this.name = 'PmtapeError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

export interface TransportOptions {
  readonly baseUrl: string;
  readonly apiKey?: string;
  /** How many times a 429 is waited out and retried before it is thrown (default 5). */
  readonly maxRetries?: number;
  /** Longest wait for one Retry-After, in ms (default 60 000). */
  readonly maxRetryWaitMs?: number;
}

export type QueryValue = string | number | boolean | Date | undefined | null | readonly (string | number)[];

/** Times become ISO 8601; arrays comma lists; undefined and null are left out. */
export function queryString(params: Record<string, QueryValue>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    if (v instanceof Date) q.set(k, v.toISOString());
    else if (Array.isArray(v)) q.set(k, v.join(','));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function errorOf(res: Response): Promise<PmtapeError> {
  const text = await res.text().catch(() => '');
  try {
    const e = (JSON.parse(text) as { error?: { status?: number; code?: string; message?: string; request_id?: string } }).error;
    if (e && typeof e.code === 'string')
      return new PmtapeError(e.status ?? res.status, e.code, e.message ?? '', e.request_id ?? res.headers.get('x-request-id'));
  } catch {
    // not an envelope: fall through
  }
  return new PmtapeError(res.status, 'http_error', `HTTP ${res.status}: ${text.slice(0, 200)}`, res.headers.get('x-request-id'));
}

export class Transport {
  private readonly base: string;
  constructor(private readonly opts: TransportOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
  }

  get baseUrl(): string {
    return this.base;
  }

  get apiKey(): string | undefined {
    return this.opts.apiKey;
  }

  /** A successful response to GET `path` (429 retried after Retry-After); errors thrown as PmtapeError. */
  async get(path: string, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json, application/x-ndjson' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    const retries = this.opts.maxRetries ?? 5;
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(this.base + path, { headers, signal });
      if (res.ok) return res;
      if (res.status === 429 && attempt < retries) {
        await res.body?.cancel();
        const secs = Number(res.headers.get('retry-after'));
        const wait = Number.isFinite(secs) && secs >= 0 ? secs * 1000 : 1000 * 2 ** attempt;
        await sleep(Math.min(wait, this.opts.maxRetryWaitMs ?? 60_000));
        continue;
      }
      throw await errorOf(res);
    }
  }

  async json<T>(path: string): Promise<T> {
    return (await (await this.get(path)).json()) as T;
  }
}

/** The lines of an NDJSON body as parsed objects; a cut-off last line is dropped, never half-parsed. */
export async function* ndjson(res: Response): AsyncGenerator<Record<string, unknown>> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let rest = '';
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      let from = 0;
      let nl: number;
      while ((nl = rest.indexOf('\n', from)) >= 0) {
        const line = rest.slice(from, nl);
        from = nl + 1;
        if (line !== '') yield JSON.parse(line) as Record<string, unknown>;
      }
      rest = rest.slice(from);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
