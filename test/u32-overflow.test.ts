/**
 * u32 overflows the engines must not have: event times past 2^32 us (an instance stops with
 * ERR.HORIZON instead of letting time wrap), cache-aware's alpha x queued tokens (saturates),
 * bounded affinity's cap (exact in u32). The GPU kernel's side is in gpu-equivalence.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ERR, R } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { ceilMulDiv, scaleMilliCapped } from '../src/engine/simulate.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { decodeAll, pastHorizon } from './support.js';

afterAll(closeEngines);

const SEEDS = 8;
const REASON = 'jobs still in the system when simulated time ran out (4,295 s, the end of u32 microseconds; most queued at server)';

describe('event times past 2^32 us', () => {
  it('stop the instance (ERR.HORIZON) rather than wrap, on the reference engine and the pool alike', async () => {
    const { problem, config } = pastHorizon();
    const records = runReference(config, 1, 0, SEEDS);
    const results = decodeAll(config, records);
    for (let i = 0; i < SEEDS; i++) {
      const r = results[i]!;
      expect(records[i * config.resultWords + R.OVERLOAD]).toBe(ERR.HORIZON);
      expect(r.overload).toBe(REASON);
      expect(r.overloaded).toBeGreaterThan(0);
      // every counted arrival resolves once: none is left in a heap whose time wrapped
      expect(r.successes + r.rejected + r.timedOut + r.died + r.overloaded).toBe(r.arrivals);
      // time never ran backwards: the slots were busy at most all of the measured window
      expect(r.busyMicros).toBeLessThanOrEqual(r.capacityMicros);
    }
    const result = await runProblem(problem, { seeds: SEEDS, baseSeed: 1, engine: 'cpu' });
    const row = result.rows[0]!;
    expect(row.passes).toBe(false);
    expect(row.overload_reason).toBe(`overloaded: ${REASON} in ${SEEDS} of ${SEEDS} seeds`);
    expect(row.overloaded).toBe(results.reduce((s, r) => s + r.overloaded, 0));
  }, 120_000);
});

describe('routing arithmetic within u32', () => {
  it("scaleMilliCapped: alpha x queued tokens, exact below the cap, the cap past it (no wrap)", () => {
    const cap = 0x3fffffff;
    for (const milli of [0, 1, 999, 1000, 1001, 3000, 7777, 64_000, 100_000]) {
      for (const a of [0, 1, 999, 1000, 123_456, 10_737_418, 10_737_419, 42_949_672, 42_949_673, 1_073_741_823, 2 ** 31, 0xffffffff]) {
        const exact = (BigInt(a) * BigInt(milli)) / 1000n;
        const want = Number(exact < BigInt(cap) ? exact : BigInt(cap));
        expect(scaleMilliCapped(a, milli, cap), `${a} x ${milli}`).toBe(want);
      }
    }
  });

  it('ceilMulDiv: bounded affinity cap ceil(c x (total + 1) / up) exact, equal to the old formula where it did not pass 2^32', () => {
    const old = (m: number, t1: number, b: number): number => Math.floor((m * t1 + b - 1) / b);
    let checked = 0;
    for (const m of [0, 1, 1000, 1250, 2000, 3333, 64_000]) {
      for (const up of [1, 2, 3, 7, 63, 64]) {
        const b = 1000 * up;
        for (const t1 of [1, 2, 999, 1000, 1001, b - 1, b, b + 1, 65_535, 67_109, 67_110, 999_999, 1_000_001]) {
          const exact = Number((BigInt(m) * BigInt(t1) + BigInt(b) - 1n) / BigInt(b));
          expect(ceilMulDiv(m, t1, b), `${m} ${t1} ${b}`).toBe(exact);
          if (m * t1 + b - 1 < 2 ** 32) {
            expect(ceilMulDiv(m, t1, b)).toBe(old(m, t1, b));
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });
});
