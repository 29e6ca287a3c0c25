// Time helpers shared by every layer: epoch milliseconds inside, ISO 8601 UTC with milliseconds
// outside, UTC days as the unit of log files and Parquet partitions.

/** Epoch ms → `2026-07-26T12:00:00.123Z`. */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

const PAD2 = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const PAD3Z = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}Z`);
const MINUTE_MS = 60_000;

/**
 * toIso for many times close together (a replay writes four per line): the text up to the minute
 * is built once per minute, the rest from tables, and the last two answers are kept (a line names
 * its receive and source time twice). The same text as toIso for every time.
 */
export class IsoFormatter {
  private minute = NaN;
  private minuteText = '';
  private lastA = NaN;
  private textA = '';
  private lastB = NaN;
  private textB = '';

  format(ms: number): string {
    if (ms === this.lastA) return this.textA;
    if (ms === this.lastB) return this.textB;
    const text = this.build(ms);
    this.lastB = this.lastA;
    this.textB = this.textA;
    this.lastA = ms;
    this.textA = text;
    return text;
  }

  private build(ms: number): string {
    // Date drops a fraction of a millisecond (toward zero); times before 1970 or past 9999 take the slow path.
    const whole = Math.trunc(ms);
    if (!(whole >= 0 && whole < 253_402_300_800_000)) return toIso(ms);
    const inMinute = whole % MINUTE_MS;
    const minute = whole - inMinute;
    if (minute !== this.minute) {
      this.minute = minute;
      this.minuteText = toIso(minute).slice(0, 17); // YYYY-MM-DDTHH:MM:
    }
    return this.minuteText + PAD2[Math.floor(inMinute / 1000)] + '.' + PAD3Z[inMinute % 1000];
  }
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

const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]00:?00)?)?$/;

/** Whether a text has the shape of an ISO 8601 UTC time (its fields may still be out of range). */
export function isTimeShaped(text: string): boolean {
  return ISO_UTC.test(text.trim());
}

/**
 * Parses a user-supplied time: integer epoch milliseconds, or ISO 8601 in UTC. Returns null when
 * the text is neither (callers turn that into `invalid_parameter`). Every field must be in range:
 * `Date.parse` rolls `2026-02-30` over to March 2 and `T24:00` to the next day, so the fields are
 * checked against the time they make.
 */
export function parseTimeParam(text: string): number | null {
  const t = text.trim();
  if (/^-?\d{1,16}$/.test(t)) {
    const n = Number(t);
    return Number.isSafeInteger(n) && n >= 0 && n < 8.64e15 ? n : null;
  }
  const m = ISO_UTC.exec(t);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4] ?? '0', m[5] ?? '0', m[6] ?? '0'].map(Number);
  const ms = Number(((m[7] ?? '') + '000').slice(0, 3)); // a finer fraction is cut to milliseconds
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  const exact =
    at.getUTCFullYear() === y &&
    at.getUTCMonth() === mo - 1 &&
    at.getUTCDate() === d &&
    at.getUTCHours() === h &&
    at.getUTCMinutes() === mi &&
    at.getUTCSeconds() === s;
  const v = at.getTime();
  return exact && Number.isFinite(v) && v >= 0 ? v : null;
}

/** Wall clock in epoch ms; one place to read it so tests can reason about it. */
export function nowMs(): number {
  return Date.now();
}

/** Does [a0, a1] (null = unbounded) overlap the query window [start, end)? */
export function overlaps(a0: number | null, a1: number | null, start: number | undefined, end: number | undefined): boolean {
  if (end !== undefined && a0 !== null && a0 >= end) return false;
  if (start !== undefined && a1 !== null && a1 < start) return false;
  return true;
}
