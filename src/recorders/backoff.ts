// Timing helpers every recorder shares: capped, jittered exponential reconnect backoff and a token
// bucket that spends an upstream's REST rate budget (pausable when the venue answers 429).

/** Capped exponential backoff with "equal jitter", so many recorders never retry in lock-step. */
export class Backoff {
  private attempt = 0;
  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt (grows per call until `reset`). */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.minMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(ceiling / 2 + (ceiling / 2) * this.random());
  }

  /** Called once a connection proved healthy (first message received). */
  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * A token bucket: `ratePerS` tokens a second, at most `burst` saved. `take()` waits for a token;
 * `pauseUntil(t)` blocks every taker until t (how a 429 with Retry-After is honoured).
 */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private pausedUntil = 0;
  private readonly burst: number;

  constructor(
    private readonly ratePerS: number,
    burst?: number,
  ) {
    this.burst = Math.max(1, burst ?? Math.ceil(ratePerS));
    this.tokens = this.burst;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.ratePerS);
    this.last = now;
  }

  /** Waits until a token is available (and any pause is over), then spends it. */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) return;
      const now = Date.now();
      if (now < this.pausedUntil) {
        await sleep(this.pausedUntil - now, signal);
        continue;
      }
      this.refill(now);
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil(((1 - this.tokens) / this.ratePerS) * 1000), signal);
    }
  }

  pauseUntil(epochMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, epochMs);
  }

  get pausedUntilMs(): number {
    return this.pausedUntil;
  }
}

/**
 * Parses a Retry-After header (delta seconds or an HTTP date) into milliseconds from now, capped
 * so a hostile or broken upstream cannot park a recorder for hours. Null when absent/unreadable.
 */
export function retryAfterMs(header: string | string[] | undefined | null, capMs = 120_000, now = Date.now()): number | null {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return null;
  const t = h.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.min(capMs, Math.round(Number(t) * 1000));
  const at = Date.parse(t);
  return Number.isFinite(at) ? Math.min(capMs, Math.max(0, at - now)) : null;
}
