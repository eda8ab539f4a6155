/**
 * Money is integer minor units everywhere (two decimals: 1250.00 is 125000). Decimal inputs such as
 * "12.5" (a percentage or a factor) are parsed into exact scaled integers; nothing here uses floats.
 */

export const MINOR_PER_MAJOR = 100n;

/** 125000 -> "1250.00"; -5 -> "-0.05". */
export function formatMinor(minor: number | bigint): string {
  const v = BigInt(minor);
  const neg = v < 0n;
  const abs = neg ? -v : v;
  const major = abs / MINOR_PER_MAJOR;
  const cents = (abs % MINOR_PER_MAJOR).toString().padStart(2, '0');
  return `${neg ? '-' : ''}${major}.${cents}`;
}

/** The same amount as a JSON number (built from the string, not by dividing floats). */
export const minorToNumber = (minor: number | bigint): number => Number(formatMinor(minor));

const DECIMAL = /^(0|[1-9]\d{0,14})(?:\.(\d{1,4}))?$/;

/** A scaled decimal: value = units / 10^4. "12.5" -> 125000n. Up to four fractional digits. */
export const DECIMAL_SCALE = 10_000n;

export function parseDecimal(text: string): bigint {
  const m = DECIMAL.exec(text);
  if (!m) throw new RangeError(`not a non-negative decimal with at most 4 fractional digits: ${text}`);
  const frac = (m[2] ?? '').padEnd(4, '0');
  return BigInt(m[1]) * DECIMAL_SCALE + BigInt(frac);
}

/** Exact division rounded half-up (away from zero for .5); operands are non-negative. */
export function divRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (numerator < 0n || denominator <= 0n) throw new RangeError('divRoundHalfUp expects numerator >= 0 and denominator > 0');
  const q = numerator / denominator;
  const r = numerator % denominator;
  return r * 2n >= denominator ? q + 1n : q;
}

/** A scaled decimal back to text with exactly two fractional digits, rounded half-up: 125000n -> "12.50". */
export function formatDecimal2(scaled: bigint): string {
  return formatMinor(divRoundHalfUp(scaled, DECIMAL_SCALE / 100n));
}

/** Operator input "1250.00" or "1250" -> 125000 minor units. Rejects more than two decimals. */
export function parseMajorAmount(text: string): number {
  const t = text.trim();
  if (/^[1-9]\d{13,}(?:\.\d{1,2})?$/.test(t)) throw new RangeError(`amount ${t} is too large: at most 9999999999999.99`);
  const m = /^(0|[1-9]\d{0,12})(?:\.(\d{1,2}))?$/.exec(t);
  if (!m) throw new RangeError(`amount must look like 1250 or 1250.50 (at most two decimals), got "${text}"`);
  return Number(BigInt(m[1]) * MINOR_PER_MAJOR + BigInt((m[2] ?? '').padEnd(2, '0')));
}

/** Operator input for a correction: "-12.50", "+12.50" or "12.50" -> signed minor units (same rules as parseMajorAmount). */
export function parseSignedMajorAmount(text: string): number {
  const t = text.trim();
  if (!/^[-+]?(0|[1-9]\d*)(?:\.\d{1,2})?$/.test(t)) {
    throw new RangeError(`amount must look like -12.50 or 1250 (at most two decimals; negative takes money back), got "${text}"`);
  }
  const minor = parseMajorAmount(t.replace(/^[-+]/, ''));
  return t.startsWith('-') && minor !== 0 ? -minor : minor;
}
