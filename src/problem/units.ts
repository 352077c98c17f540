/**
 * Units of a problem file: durations with a unit become integer microseconds (docs/model.md
 * section 7), fractions may be written as percentages. Parsed exactly from the decimal text,
 * never through floating-point multiplication, so '0.1s' is 100000 us and not 99999.
 */

/** Microseconds in one of each unit a duration may carry. */
export const DURATION_UNITS: Readonly<Record<string, number>> = {
  us: 1,
  µs: 1,
  ms: 1_000,
  s: 1_000_000,
  m: 60_000_000,
  h: 3_600_000_000,
};

/** For editors (JSON Schema) and problems/README.md ("Values"); keep in step with DURATION_UNITS. */
export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?\\s*(us|µs|ms|s|m|h)$';

export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

const DURATION_RE = /^(-?)([0-9]+)(?:\.([0-9]+))?\s*([a-zA-Zµ]*)$/;

/**
 * A duration ('250ms', '1.5s', '2m', '500us') in integer microseconds. A bare number is refused
 * because '30' could mean seconds or milliseconds; 0 alone is accepted (it is 0 in any unit).
 */
export function parseDuration(input: unknown): Parsed<number> {
  if (typeof input === 'number') {
    if (input === 0) return { ok: true, value: 0 };
    return { ok: false, message: `needs a unit, e.g. ${input}s or ${input}ms` };
  }
  if (typeof input !== 'string') return { ok: false, message: 'must be a duration with a unit, e.g. 30s' };
  const text = input.trim();
  const m = DURATION_RE.exec(text);
  if (m === null) return { ok: false, message: 'must be a duration with a unit, e.g. 30s or 250ms' };
  const [, sign, whole, frac = '', unit = ''] = m as unknown as [string, string, string, string | undefined, string | undefined];
  if (unit === '') {
    if (Number(whole) === 0 && /^0*$/.test(frac)) return { ok: true, value: 0 };
    return { ok: false, message: `needs a unit, e.g. ${text}s or ${text}ms` };
  }
  const scale = DURATION_UNITS[unit];
  if (scale === undefined) {
    return { ok: false, message: `unknown unit "${unit}"; use one of ${Object.keys(DURATION_UNITS).join(', ')}` };
  }
  if (sign === '-') return { ok: false, message: 'must not be negative' };
  if (frac.length > 9) return { ok: false, message: 'has too many decimal places' };
  const fracScaled = Number(frac === '' ? '0' : frac) * scale;
  const divisor = 10 ** frac.length;
  if (fracScaled % divisor !== 0) {
    return { ok: false, message: 'is not a whole number of microseconds' };
  }
  const value = Number(whole) * scale + fracScaled / divisor;
  if (!Number.isSafeInteger(value)) return { ok: false, message: 'is too long' };
  return { ok: true, value };
}

/** Microseconds back to the shortest readable duration ('250ms', '1.5s', '250us'). */
export function formatDuration(micros: number): string {
  if (micros === 0) return '0s';
  const pick = (scale: number, unit: string): string => `${trimDecimal(micros / scale)}${unit}`;
  if (micros % 60_000_000 === 0 && micros >= 600_000_000) return pick(60_000_000, 'm');
  if (micros >= 1_000_000) return pick(1_000_000, 's');
  if (micros >= 1_000) return pick(1_000, 'ms');
  return `${micros}us`;
}

function trimDecimal(x: number): string {
  return Number(x.toFixed(6)).toString();
}

const PERCENT_RE = /^([0-9]+(?:\.[0-9]+)?)\s*%$/;

/** A fraction as a number (0.99) or a percentage string ('99%'). Range checks are the caller's. */
export function parseFraction(input: unknown): Parsed<number> {
  if (typeof input === 'number' && Number.isFinite(input)) return { ok: true, value: input };
  if (typeof input === 'string') {
    const m = PERCENT_RE.exec(input.trim());
    if (m !== null) return { ok: true, value: Number(m[1]) / 100 };
  }
  return { ok: false, message: 'must be a fraction such as 0.99 or a percentage such as "99%"' };
}

/** Bytes in one of each unit a byte rate may carry (`25GB/s`): decimal (SI) and binary (IEC) prefixes. */
export const BYTE_RATE_UNITS: Readonly<Record<string, number>> = {
  'B/s': 1,
  'kB/s': 1e3,
  'KB/s': 1e3,
  'MB/s': 1e6,
  'GB/s': 1e9,
  'TB/s': 1e12,
  'KiB/s': 1024,
  'MiB/s': 1024 ** 2,
  'GiB/s': 1024 ** 3,
  'TiB/s': 1024 ** 4,
};

/** For editors (JSON Schema) and problems/README.md ("Values"); keep in step with BYTE_RATE_UNITS. */
export const BYTE_RATE_PATTERN = '^[0-9]+(\\.[0-9]+)?\\s*(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)/s$';

const BYTE_RATE_RE = /^([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*\/s)$/;

/** A byte rate ('25GB/s', '900 GiB/s') in bytes a second. A bare number is refused: GB/s or GiB/s? */
export function parseByteRate(input: unknown): Parsed<number> {
  if (typeof input !== 'string') return { ok: false, message: 'must be a byte rate with a unit, e.g. 25GB/s' };
  const m = BYTE_RATE_RE.exec(input.trim());
  if (m === null) return { ok: false, message: 'must be a byte rate with a unit, e.g. 25GB/s or 64GiB/s' };
  const scale = BYTE_RATE_UNITS[m[2]!];
  if (scale === undefined) return { ok: false, message: `unknown unit "${m[2]}"; use one of ${Object.keys(BYTE_RATE_UNITS).join(', ')}` };
  return { ok: true, value: Number(m[1]) * scale };
}
