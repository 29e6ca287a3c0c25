// Parsers of operator input for src/config.ts (which alone reads the environment and passes the
// text in): the error every bad setting raises, rate limits, pino's level names, and the nesting of
// the config file (its validators and their error messages recurse, so depth is bounded first).

export class ConfigError extends Error {
  constructor(field: string, why: string) {
    super(`config: ${field} ${why}`);
    this.name = 'ConfigError';
  }
}

export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

export function parseRateLimits(text: string): { readonly free: RateLimit; readonly paid: RateLimit } | null {
  if (text.trim() === 'off') return null;
  const out: Record<string, RateLimit> = {};
  for (const part of text.split(',')) {
    const m = /^\s*(free|paid)\s*=\s*(\d+)\s*\/\s*(\d*)\s*(s|m|h)\s*$/.exec(part);
    if (!m) throw new ConfigError('PMTAPE_RATE_LIMITS', `has "${part}"; expected e.g. free=60/m,paid=3000/m or off`);
    // A zero count or window would refuse every request of the plan: `off` is how limits are disabled.
    if (Number(m[2]) < 1 || m[3] === '0' || /^0+$/.test(m[3])) {
      throw new ConfigError(
        'PMTAPE_RATE_LIMITS',
        `has "${part.trim()}"; the count and window must be at least 1 (form PLAN=COUNT/[N]s|m|h, e.g. free=60/m,paid=3000/m; use off to disable limits)`,
      );
    }
    const unit = { s: 1000, m: 60_000, h: 3_600_000 }[m[4] as 's' | 'm' | 'h'];
    out[m[1]] = { max: Number(m[2]), windowMs: (m[3] ? Number(m[3]) : 1) * unit };
  }
  return {
    free: out.free ?? { max: 60, windowMs: 60_000 },
    paid: out.paid ?? { max: 3000, windowMs: 60_000 },
  };
}

/** pino's levels; anything else makes pino throw a sentence that names no variable. */
export const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function logLevel(flag: string | undefined, env: string | undefined): string {
  const [name, text] = flag !== undefined ? ['--log-level', flag] : ['PMTAPE_LOG_LEVEL', env];
  if (text === undefined || text.trim() === '') return 'info';
  const level = text.trim().toLowerCase();
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(name, `must be one of ${LOG_LEVELS.join(', ')}, got "${text.slice(0, 40)}"`);
  return level;
}

/** Deeper than any real config; the validators and their messages recurse, so depth is bounded first. */
export const MAX_CONFIG_DEPTH = 16;

/** The field path where `v` first nests deeper than MAX_CONFIG_DEPTH, or null; iterative, never recursion. */
export function tooDeep(v: unknown): string | null {
  const stack: Array<{ v: unknown; depth: number; at: string }> = [{ v, depth: 0, at: '' }];
  while (stack.length > 0) {
    const { v: x, depth, at } = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    if (depth >= MAX_CONFIG_DEPTH) return at || '(top)';
    for (const [k, child] of Object.entries(x))
      stack.push({ v: child, depth: depth + 1, at: Array.isArray(x) ? `${at}[${k}]` : at ? `${at}.${k}` : k });
  }
  return null;
}
