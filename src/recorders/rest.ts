// REST helper for recorders: every request spends a token of the upstream's rate budget, a 429
// pauses the whole budget for its Retry-After, 5xx and timeouts are retried with backoff, and every
// failure is a RecorderError with a code (the caller decides; nothing here crashes a recorder).

import { Backoff, TokenBucket, retryAfterMs, sleep } from './backoff.js';
import { RecorderError } from './recorder.js';

export interface RestOptions {
  readonly baseUrl: string;
  /** Requests per second (the config's `rate_per_s`). */
  readonly ratePerS: number;
  readonly timeoutMs?: number;
  /** Attempts per request for 429/5xx/timeouts before giving up (default 3). */
  readonly attempts?: number;
  readonly headers?: Record<string, string>;
  /** Told about each failed attempt (counting, logging) even when a retry follows. */
  readonly onAttemptError?: (err: RecorderError) => void;
  readonly signal?: AbortSignal;
}

export class RestClient {
  readonly bucket: TokenBucket;
  requests = 0;

  constructor(private readonly opts: RestOptions) {
    this.bucket = new TokenBucket(opts.ratePerS, Math.max(1, Math.ceil(opts.ratePerS)));
  }

  /** GET `path?query` and parse JSON; throws RecorderError after the last failed attempt. */
  async getJson(path: string, query: Record<string, string | number | boolean | undefined> = {}): Promise<unknown> {
    const url = new URL(this.opts.baseUrl.replace(/\/$/, '') + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const attempts = this.opts.attempts ?? 3;
    const backoff = new Backoff(200, 5000);
    let last: RecorderError = new RecorderError('internal', 'no attempt made');
    for (let i = 0; i < attempts; i++) {
      if (this.opts.signal?.aborted) throw new RecorderError('internal', 'aborted');
      await this.bucket.take(this.opts.signal);
      this.requests++;
      try {
        return await this.once(url);
      } catch (e) {
        last = e instanceof RecorderError ? e : new RecorderError('internal', (e as Error).message);
        // Stopping aborts requests in flight: that is not an upstream error.
        if (this.opts.signal?.aborted) throw new RecorderError('internal', 'aborted');
        this.opts.onAttemptError?.(last);
        if (last.code === 'http_4xx') throw last;
        if (last.code !== 'http_429') await sleep(backoff.next(), this.opts.signal);
      }
    }
    throw last;
  }

  private async once(url: URL): Promise<unknown> {
    const timeoutMs = this.opts.timeoutMs ?? 10_000;
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (this.opts.signal) signals.push(this.opts.signal);
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'application/json', ...this.opts.headers }, signal: AbortSignal.any(signals) });
    } catch (e) {
      const name = (e as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError')
        throw new RecorderError('timeout', `GET ${url.pathname} timed out after ${timeoutMs} ms`);
      throw new RecorderError('connect', `GET ${url.pathname} failed: ${(e as Error).message}`);
    }
    if (res.status === 429) {
      const wait = retryAfterMs(res.headers.get('retry-after')) ?? 1000;
      this.bucket.pauseUntil(Date.now() + wait);
      await res.body?.cancel().catch(() => undefined);
      throw new RecorderError('http_429', `GET ${url.pathname} answered 429; waiting ${wait} ms (Retry-After)`, { retry_after_ms: wait });
    }
    if (res.status >= 500) {
      await res.body?.cancel().catch(() => undefined);
      throw new RecorderError('http_5xx', `GET ${url.pathname} answered ${res.status}`);
    }
    if (res.status >= 400) {
      const text = await res.text().catch(() => '');
      throw new RecorderError('http_4xx', `GET ${url.pathname} answered ${res.status}: ${text.slice(0, 200)}`);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new RecorderError('timeout', `GET ${url.pathname} body failed: ${(e as Error).message}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new RecorderError('malformed', `GET ${url.pathname} returned invalid JSON (${text.slice(0, 80)})`);
    }
  }
}
