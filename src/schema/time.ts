// Time helpers shared by every layer: epoch milliseconds inside, ISO 8601 UTC with milliseconds
// outside, UTC days as the unit of log files and Parquet partitions.

/** Epoch ms → `2026-07-26T12:00:00.123Z`. */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** Epoch ms → `YYYY-MM-DD` (UTC). */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` → epoch ms of its UTC midnight, or null when not a real date. */
export function dayStartMs(day: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return null;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  return Number.isFinite(ms) && utcDay(ms) === day ? ms : null;
}

export const DAY_MS = 86_400_000;

const ISO_UTC = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]00:?00)?)?$/;

/**
 * Parses a user-supplied time: integer epoch milliseconds, or ISO 8601 in UTC. Returns null when
 * the text is neither (callers turn that into `invalid_parameter`).
 */
export function parseTimeParam(text: string): number | null {
  const t = text.trim();
  if (/^-?\d{1,16}$/.test(t)) {
    const n = Number(t);
    return Number.isSafeInteger(n) && n >= 0 && n < 8.64e15 ? n : null;
  }
  if (!ISO_UTC.test(t)) return null;
  const ms = Date.parse(t.length === 10 ? `${t}T00:00:00Z` : /Z$|[+-]00:?00$/.test(t) ? t : `${t}Z`);
  return Number.isFinite(ms) && ms >= 0 ? ms : null;
}

/** Wall clock in epoch ms; one place to read it so tests can reason about it. */
export function nowMs(): number {
  return Date.now();
}
