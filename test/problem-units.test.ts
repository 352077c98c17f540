import { describe, expect, it } from 'vitest';
import { formatDuration, parseByteRate, parseDuration, parseFraction } from '../src/problem/units.js';

describe('durations', () => {
  it.each([
    ['250ms', 250_000],
    ['30s', 30_000_000],
    ['1.5s', 1_500_000],
    ['0.1s', 100_000],
    ['2m', 120_000_000],
    ['1h', 3_600_000_000],
    ['500us', 500],
    ['500µs', 500],
    ['0.25ms', 250],
    ['8 ms', 8_000],
    ['0', 0],
    [0, 0],
  ])('%s is %i microseconds', (text, micros) => {
    expect(parseDuration(text)).toEqual({ ok: true, value: micros });
  });

  it.each([
    [30, 'needs a unit'],
    ['30', 'needs a unit'],
    ['30sec', 'unknown unit "sec"'],
    ['30 days', 'unknown unit "days"'],
    ['-5s', 'must not be negative'],
    ['0.5us', 'not a whole number of microseconds'],
    ['fast', 'must be a duration'],
    [true, 'must be a duration'],
  ])('%s is refused: %s', (input, reason) => {
    const r = parseDuration(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(reason);
  });

  it('formats back to the shortest readable text', () => {
    expect(formatDuration(250_000)).toBe('250ms');
    expect(formatDuration(30_000_000)).toBe('30s');
    expect(formatDuration(1_500_000)).toBe('1.5s');
    expect(formatDuration(250)).toBe('250us');
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(3_960_000_000)).toBe('66m');
  });

  it('round-trips through formatting', () => {
    for (const micros of [1, 250, 8_000, 250_000, 1_500_000, 30_000_000, 180_000_000, 3_600_000_000]) {
      expect(parseDuration(formatDuration(micros))).toEqual({ ok: true, value: micros });
    }
  });
});

describe('fractions', () => {
  it('take numbers and percentages', () => {
    expect(parseFraction(0.99)).toEqual({ ok: true, value: 0.99 });
    expect(parseFraction('99%')).toEqual({ ok: true, value: 0.99 });
    expect(parseFraction('85 %')).toEqual({ ok: true, value: 0.85 });
    expect(parseFraction('99.5%')).toEqual({ ok: true, value: 0.995 });
    expect(parseFraction('high').ok).toBe(false);
    expect(parseFraction('0.99').ok).toBe(false);
  });
});

describe('byte rates', () => {
  it.each([
    ['25GB/s', 25e9],
    ['12.5 GB/s', 12.5e9],
    ['64GiB/s', 64 * 1024 ** 3],
    ['900MB/s', 900e6],
    ['1TB/s', 1e12],
    ['100B/s', 100],
  ])('%s is %d bytes a second', (text, bytes) => {
    expect(parseByteRate(text)).toEqual({ ok: true, value: bytes });
  });

  it.each([
    [25, 'must be a byte rate with a unit, e.g. 25GB/s'],
    ['25', 'must be a byte rate with a unit, e.g. 25GB/s or 64GiB/s'],
    ['25GB', 'must be a byte rate with a unit, e.g. 25GB/s or 64GiB/s'],
    ['25Gb/s', 'unknown unit "Gb/s"'],
  ])('refuses %s', (input, message) => {
    const r = parseByteRate(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(message);
  });
});
