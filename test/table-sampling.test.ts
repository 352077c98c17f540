// What the engines draw from a distribution's table (src/engine/tables.ts, rng.ts sampleTable):
// a uniform of whole numbers gives each of min..max alike and nothing outside.
import { describe, expect, it } from 'vitest';
import { sampleTable } from '../src/engine/rng.js';
import { buildTable } from '../src/engine/tables.js';

/** Every value the table gives for u on a grid of 2^20 points of the u32 range, counted. */
function sampled(table: Uint32Array): Map<number, number> {
  const counts = new Map<number, number>();
  for (let k = 0; k < 1 << 20; k++) {
    const v = sampleTable(table, 0, (k << 12) | 0x800);
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return counts;
}

describe('a uniform table', () => {
  it('gives 1 and 2 half the time each for {min: 1, max: 2}, never 3', () => {
    const counts = sampled(buildTable({ kind: 'uniform', min: 1, max: 2 }));
    expect([...counts.keys()].sort()).toEqual([1, 2]);
    expect(counts.get(1)).toBe(1 << 19);
  });

  it.each([
    [100, 500],
    [20, 200],
    [500, 1500],
    [0, 5000],
  ])('gives each whole number of %i..%i within a segment\'s share of alike', (min, max) => {
    const counts = sampled(buildTable({ kind: 'uniform', min, max }));
    const values = [...counts.keys()].sort((a, b) => a - b);
    expect([values[0], values.at(-1)]).toEqual([min, max]);
    expect(values).toHaveLength(max - min + 1);
    // each value's share is 1 / (max - min + 1), off by at most one table segment's (1 / 1024)
    const share = 1 / (max - min + 1);
    for (const n of counts.values()) expect(Math.abs(n / (1 << 20) - share)).toBeLessThanOrEqual(1 / 1024);
    const mean = [...counts].reduce((s, [v, n]) => s + v * n, 0) / (1 << 20);
    expect(Math.abs(mean - (min + max) / 2)).toBeLessThan(0.01 * (max - min) + 0.01);
  });
});
