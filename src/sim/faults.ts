// The `--faults` spec of `pmtape sim` (API.md §1) and the seeded dice every emulated kind rolls.
// Spec: comma-separated `name=value`; rates are probabilities per message (WS) or per request
// (HTTP); `drop` also takes a period (`drop=4s`). Unknown names are an error naming the field.

/** Deterministic PRNG (mulberry32) so `--seed` reproduces a run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Faults {
  /** Close each WS connection after about this many ms (0 = never)... */
  readonly dropEveryMs: number;
  /** ...or with this probability per message sent. */
  readonly drop: number;
  /** Replace a message with a truncated copy (the message is lost, the frame unparseable). */
  readonly garbage: number;
  /** Skip a message (lost without trace, like a venue bug): the recorder must notice. */
  readonly gap: number;
  /** Send a message twice. */
  readonly dup: number;
  /** Send an extra event of an unknown type. */
  readonly unknown: number;
  /** Start a silent stall (no data, no PONG, socket kept open) for `stallMs`. */
  readonly stall: number;
  readonly stallMs: number;
  /** HTTP (and WS upgrade) answers 429 with Retry-After `retryAfterS`. */
  readonly http429: number;
  readonly retryAfterS: number;
  /** HTTP (and WS upgrade) answers 5xx. */
  readonly http5xx: number;
  /** HTTP answers only after `slowMs`. */
  readonly slow: number;
  readonly slowMs: number;
}

export const NO_FAULTS: Faults = {
  dropEveryMs: 0,
  drop: 0,
  garbage: 0,
  gap: 0,
  dup: 0,
  unknown: 0,
  stall: 0,
  stallMs: 5000,
  http429: 0,
  retryAfterS: 1,
  http5xx: 0,
  slow: 0,
  slowMs: 1500,
};

const RATE_KEYS = ['drop', 'garbage', 'gap', 'dup', 'unknown', 'stall', 'http429', 'http5xx', 'slow'] as const;
const DURATION_KEYS: Record<string, keyof Faults> = { stall_ms: 'stallMs', slow_ms: 'slowMs', retry_after_s: 'retryAfterS' };

export class FaultSpecError extends Error {
  constructor(message: string) {
    super(`--faults: ${message}`);
    this.name = 'FaultSpecError';
  }
}

/** `4s`, `250ms`, `1.5m`, or a bare number of ms → ms. */
function durationMs(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) return null;
  return Math.round(Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm']);
}

/** Parses e.g. `drop=4s,garbage=0.02,gap=0.01,stall=0.01,http429=0.05,http5xx=0.02`. */
export function parseFaults(spec: string | undefined | null): Faults {
  const out: Record<string, number> = { ...NO_FAULTS };
  if (!spec || !spec.trim()) return out as unknown as Faults;
  for (const part of spec.split(',')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    if (eq < 0) throw new FaultSpecError(`"${part}" is not name=value`);
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 'drop' && /[a-z]$/.test(value)) {
      const ms = durationMs(value);
      if (ms === null || ms < 100) throw new FaultSpecError(`drop=${value} must be a rate in [0,1] or a period like 4s (≥ 100ms)`);
      out.dropEveryMs = ms;
      continue;
    }
    if ((RATE_KEYS as readonly string[]).includes(name)) {
      const r = Number(value);
      if (!/^\d*\.?\d+$/.test(value) || !(r >= 0 && r <= 1)) throw new FaultSpecError(`${name}=${value} must be a probability in [0, 1]`);
      out[name] = r;
      continue;
    }
    const dk = DURATION_KEYS[name];
    if (dk) {
      const ms = name === 'retry_after_s' ? Number(value) : durationMs(value);
      if (ms === null || !Number.isFinite(ms) || ms < 0) throw new FaultSpecError(`${name}=${value} must be a duration`);
      out[dk] = ms;
      continue;
    }
    throw new FaultSpecError(`unknown fault "${name}" (known: ${[...RATE_KEYS, ...Object.keys(DURATION_KEYS)].join(', ')})`);
  }
  return out as unknown as Faults;
}

/** The dice of one emulated kind: `roll('garbage')` is true with the configured probability. */
export class FaultDice {
  constructor(
    readonly faults: Faults,
    private readonly random: () => number,
  ) {}

  roll(name: (typeof RATE_KEYS)[number]): boolean {
    const p = this.faults[name];
    return p > 0 && this.random() < p;
  }

  /** A truncated copy of a frame: never valid JSON, often cut inside a string. */
  garble(text: string): string {
    const cut = Math.max(1, Math.floor(text.length * (0.2 + 0.6 * this.random())));
    return text.slice(0, Math.min(cut, text.length - 1)) + (this.random() < 0.5 ? '' : '\u0000}{');
  }

  /**
   * What an HTTP request (or WS upgrade) should get: a 429 with Retry-After, a 5xx, a delay, or
   * nothing special. Checked in this order so each rate means what it says.
   */
  http(): { status: 429; retryAfterS: number } | { status: 500 | 502 | 503 } | { delayMs: number } | null {
    if (this.roll('http429')) return { status: 429, retryAfterS: this.faults.retryAfterS };
    if (this.roll('http5xx')) return { status: ([500, 502, 503] as const)[Math.floor(this.random() * 3)] };
    if (this.roll('slow')) return { delayMs: this.faults.slowMs };
    return null;
  }
}
