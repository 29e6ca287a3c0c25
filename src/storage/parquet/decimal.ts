// Exact decimal text ↔ Parquet DECIMAL(18, scale) (an INT64 unscaled value) plus a small "text
// form" code, so every price and size the venue sent reads back as the same decimal *and* the same
// text ("0.30" stays "0.30", ".48" stays ".48", "0.5200" stays "0.5200"). Anything that is not a
// plain unsigned decimal, or does not fit the declared type, is refused: never rounded.

/** Digits of precision of every DECIMAL column (fits Parquet INT64). */
export const DECIMAL_PRECISION = 18;
const LIMIT = 10n ** 18n;
const NO_LEADING_ZERO = 64;
const PLAIN = /^(\d*)(?:\.(\d*))?$/;

/** A value that cannot be stored exactly: compaction stops with this message (the log is kept). */
export class DecimalError extends Error {}

/** Unscaled integer as a JS number when safe (the common case), else a bigint. */
export type Unscaled = number | bigint;

export interface Encoded {
  readonly unscaled: Unscaled;
  /** Digits after the point in the text (0 = no point), + 64 when the text had no leading zero. */
  readonly form: number;
}

/**
 * Parses decimal text at `scale`. `where` names the record for the error message (market, seq).
 * Accepts `123`, `0.30`, `.48`; refuses signs, exponents, blanks, `5.` and more decimals than scale.
 */
export function encodeDecimal(text: string, scale: number, where: string, field?: string): Encoded {
  // The message's words are joined only when a value is refused: this runs millions of times a day.
  return fastEncode(text, scale) ?? parseDecimal(text, scale, field === undefined ? where : `${where} ${field}`);
}

const POW10 = Array.from({ length: 16 }, (_, k) => 10 ** k);

/**
 * The common case without a regex or a string: a plain decimal whose unscaled value has at most 15
 * digits (exact as a double). Anything else (a value to refuse, or one needing a bigint) is null,
 * and `parseDecimal` decides. Compaction calls this once per price and size, millions of times a day.
 */
function fastEncode(text: string, scale: number): Encoded | null {
  if (typeof text !== 'string') return null;
  const n = text.length;
  let v = 0,
    intDigits = 0,
    fracDigits = 0,
    point = -1;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      // '.'
      if (point >= 0) return null;
      point = i;
    } else if (c >= 48 && c <= 57) {
      v = v * 10 + (c - 48);
      if (point < 0) intDigits++;
      else fracDigits++;
    } else return null;
  }
  if (intDigits + fracDigits === 0 || (point >= 0 && fracDigits === 0) || fracDigits > scale) return null;
  if (intDigits > 1 && text.charCodeAt(0) === 48) return null; // a leading zero such as "05"
  if (Math.max(intDigits, 1) + scale > 15) return null;
  return { unscaled: v * POW10[scale - fracDigits], form: fracDigits + (intDigits === 0 ? NO_LEADING_ZERO : 0) };
}

/** The general path: every value, refusals with their message; the reference the fast path is tested against. */
export function parseDecimal(text: string, scale: number, where: string): Encoded {
  const m = typeof text === 'string' ? PLAIN.exec(text) : null;
  if (!m || (m[1] === '' && !m[2]) || (m[2] !== undefined && m[2] === '') || (m[1].length > 1 && m[1][0] === '0')) {
    throw new DecimalError(
      `${where}: value ${JSON.stringify(text)} is not a plain unsigned decimal; it cannot be stored exactly as DECIMAL(${DECIMAL_PRECISION}, ${scale})`,
    );
  }
  const intPart = m[1];
  const frac = m[2] ?? '';
  if (frac.length > scale) {
    throw new DecimalError(
      `${where}: value ${JSON.stringify(text)} has ${frac.length} decimals, more than DECIMAL(${DECIMAL_PRECISION}, ${scale}) holds`,
    );
  }
  const digits = (intPart || '0') + frac.padEnd(scale, '0');
  let unscaled: Unscaled;
  if (digits.length <= 15) unscaled = Number(digits);
  else {
    const b = BigInt(digits);
    if (b >= LIMIT) throw new DecimalError(`${where}: value ${JSON.stringify(text)} does not fit DECIMAL(${DECIMAL_PRECISION}, ${scale})`);
    unscaled = b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
  }
  return { unscaled, form: frac.length + (intPart === '' ? NO_LEADING_ZERO : 0) };
}

/** The text back from the unscaled value, its column's scale and the row's text form. */
export function decodeDecimal(unscaled: Unscaled, scale: number, form: number): string {
  const decimals = form & (NO_LEADING_ZERO - 1);
  const noLead = (form & NO_LEADING_ZERO) !== 0;
  if (typeof unscaled === 'number' && unscaled <= 1e15 && scale <= 15) {
    // Integer arithmetic below 10^15 (every product stays under 2^53, so exact): no BigInt, no
    // padding of the whole number. The remainder check guards the division's rounding.
    const unit = POW10[scale];
    let intPart = Math.floor(unscaled / unit);
    let rem = unscaled - intPart * unit;
    if (rem < 0) {
      intPart--;
      rem += unit;
    } else if (rem >= unit) {
      intPart++;
      rem -= unit;
    }
    const head = noLead ? '' : String(intPart);
    if (decimals === 0) return head;
    return `${head}.${String(rem + unit).slice(1, 1 + decimals)}`; // the leading "1" keeps the zeros
  }
  let s = (typeof unscaled === 'bigint' ? unscaled : BigInt(unscaled)).toString();
  if (s.length <= scale) s = s.padStart(scale + 1, '0');
  const intPart = s.slice(0, s.length - scale);
  const frac = s.slice(s.length - scale, s.length - scale + decimals);
  const head = noLead ? '' : intPart;
  return decimals ? `${head}.${frac}` : head;
}
