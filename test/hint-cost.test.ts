/** The cost expression: precedence, errors, and how paths resolve against a problem. */
import { describe, expect, it } from 'vitest';
import type { ServesimError } from '../src/errors.js';
import { parseCost } from '../src/hint/cost.js';
import { runHints } from '../src/hint/search.js';

const values: Record<string, number> = { 'gpu.replicas': 6, 'gpu.slots': 4, 'app.replicas': 3, 'workload.prefixes[0].tokens': 12000 };
const cost = (text: string): number => parseCost(text).evaluate((p) => values[p]!);

describe('parseCost', () => {
  it('binds * and / tighter than + and -, left to right', () => {
    expect(cost('gpu.replicas * gpu.slots')).toBe(24);
    expect(cost('1 + 2 * 3')).toBe(7);
    expect(cost('(1 + 2) * 3')).toBe(9);
    expect(cost('10 - 4 - 3')).toBe(3);
    expect(cost('24 / 4 / 2')).toBe(3);
    expect(cost('2 * gpu.replicas * gpu.slots + 0.5 * app.replicas')).toBe(49.5);
    expect(cost('-gpu.slots + 10')).toBe(6);
    expect(cost('-(1 - 3) * 2')).toBe(4);
    expect(cost('1e3 / workload.prefixes[0].tokens * 12')).toBe(1);
  });

  it('lists the paths it reads, once each', () => {
    expect(parseCost('gpu.replicas * gpu.slots + gpu.replicas').paths).toEqual(['gpu.replicas', 'gpu.slots']);
  });

  it('refuses what is not arithmetic, naming where', () => {
    expect(() => parseCost('')).toThrow(/cost: is empty/);
    expect(() => parseCost('gpu.replicas *')).toThrow(/expected a number, a path or "\(" at the end/);
    expect(() => parseCost('(1 + 2')).toThrow(/expected "\)" at the end/);
    expect(() => parseCost('1 2')).toThrow(/expected an operator at column 3/);
    expect(() => parseCost('gpu.slots ** 2')).toThrow(/column 12/);
    expect(() => parseCost('process.exit(1)')).toThrow(/expected an operator at column 13/);
    expect(() => parseCost('a; b')).toThrow(/unexpected ";" at column 2/);
  });
});

describe('the cost of a hint request', () => {
  const request = { problem: 'hot-prefix', vary: { 'gpu.slots': [4, 8] }, seeds: 1 };

  it('names the paths that are neither varied nor numbers of the problem, before simulating', async () => {
    await expect(runHints({ ...request, cost: 'gpu.replicas * gpu.slotz + router.policy + lb.overhead' })).rejects.toThrow(
      /cost: unknown paths gpu\.slotz, router\.policy in/,
    );
  });

  it('reads only fields of the problem, never members every object inherits', async () => {
    await expect(runHints({ ...request, cost: 'constructor.length * gpu.slots' })).rejects.toThrow(
      /^cost: unknown path constructor\.length in "constructor\.length \* gpu\.slots": neither varied nor a number in the problem$/,
    );
  });

  it('refuses a varied path of names and a cost that is not a number', async () => {
    await expect(runHints({ ...request, vary: { 'router.policy': ['random'] }, cost: 'router.policy' })).rejects.toThrow(
      /router\.policy in "router\.policy" varies over names/,
    );
    await expect(runHints({ ...request, cost: '1 / (gpu.slots - 4)' })).rejects.toThrow(/is not a finite number at gpu\.slots=4/);
  });
});

describe('a hint request', () => {
  it('is checked before anything runs', async () => {
    await expect(runHints({ problem: 'hot-prefix', vary: {} })).rejects.toThrow(/vary: needs at least one path/);
    await expect(runHints({ problem: 'hot-prefix', vary: { 'gpu.slots': { from: 8, to: 4, step: 1 } } })).rejects.toThrow(
      /to must be at least from/,
    );
    await expect(runHints({ problem: 'problems/hot-prefix.yaml', vary: { 'gpu.slots': [4] } })).rejects.toThrow(/not a shipped problem id/);
  });

  it('lists the first 20 of a thousand mistakes, and counts the rest', async () => {
    const vary = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`gpu.p${i}`, []]));
    const err = (await runHints({ problem: 'hot-prefix', vary }).catch((e: unknown) => e)) as ServesimError & { issues: unknown[] };
    expect(err.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(err.message).toMatch(/^invalid hint request: vary\.gpu\.p0: needs at least one value; .*; vary\.gpu\.p19: needs at least one value; \.\.\. and 980 more$/);
    expect(err.issues).toHaveLength(20);
  });

  it('refuses a path named __proto__ (a JSON key) rather than dropping it', async () => {
    const vary = JSON.parse('{"__proto__": [1], "gpu.slots": [4, 8]}') as Record<string, number[]>;
    await expect(runHints({ problem: 'hot-prefix', vary, seeds: 1 })).rejects.toMatchObject({
      code: 'SERVESIM_SWEEP_INVALID',
      issues: [{ path: 'vary.__proto__', message: expect.stringContaining('not a problem field path') }],
    });
  });

  it('stops when cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(runHints({ problem: 'hot-prefix', vary: { 'gpu.slots': [4, 8] }, seeds: 1 }, { signal: controller.signal })).rejects.toMatchObject({
      code: 'SERVESIM_CANCELLED',
    });
  });
});
