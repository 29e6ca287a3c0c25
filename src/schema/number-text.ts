// A price or size that a venue sends as a JSON number arrives as an IEEE double, and a venue that
// serializes doubles sends their binary noise: 64.51 computed as 6451 / 100 prints, shortest and
// round-trip exact, as "64.50999999999999". JavaScript's own Number → string is the shortest text
// that reads back as the same double, so it keeps the noise. A double holds 15 significant decimal
// digits faithfully (DBL_DIG): any 15-digit decimal survives text → double → text. So the canonical
// text of a double is its value rounded to 15 significant digits, printed shortest and without
// exponent notation (a decimal column cannot read "1e+21"). Text a venue sends as text is never
// passed through here: it is stored byte for byte.

/** Significant decimal digits a double carries faithfully (C's DBL_DIG). */
export const DOUBLE_DIGITS = 15;

/**
 * The canonical decimal text of a finite double: at most 15 significant digits, no exponent, no
 * sign on zero (`-0` → `"0"`), no trailing zeros. `64.50999999999999` → `"64.51"`, `1e21` →
 * `"1000000000000000000000"`, `1e-9` → `"0.000000001"`. Throws a RangeError on NaN or ±Infinity.
 */
export function doubleText(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`${x} is not a finite number`);
  if (x === 0) return '0';
  // From toPrecision's own text: Number() of it would round the largest doubles up to Infinity.
  return withoutTrailingZeros(plainText(x.toPrecision(DOUBLE_DIGITS)));
}

/** `"64.5100000000000"` → `"64.51"`, `"100.000"` → `"100"`; a whole number is left alone. */
function withoutTrailingZeros(s: string): string {
  if (!s.includes('.')) return s;
  const t = s.replace(/0+$/, '');
  return t.endsWith('.') ? t.slice(0, -1) : t;
}

/** JavaScript's number text (`"1.50000000000000e-7"`, `"1e+21"`, `"-2.5"`) without its exponent. */
function plainText(s: string): string {
  const e = s.indexOf('e');
  if (e < 0) return s;
  const neg = s[0] === '-';
  const mantissa = s.slice(neg ? 1 : 0, e);
  const exp = Number(s.slice(e + 1));
  const point = mantissa.indexOf('.');
  const digits = point < 0 ? mantissa : mantissa.slice(0, point) + mantissa.slice(point + 1);
  // Position of the decimal point counted from the start of `digits`.
  const at = (point < 0 ? mantissa.length : point) + exp;
  let out: string;
  if (at <= 0) out = `0.${'0'.repeat(-at)}${digits}`;
  else if (at >= digits.length) out = digits + '0'.repeat(at - digits.length);
  else out = `${digits.slice(0, at)}.${digits.slice(at)}`;
  return neg ? `-${out}` : out;
}
