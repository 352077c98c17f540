/**
 * A sweep's grid points carry their overrides parsed (each axis's path once, its values as
 * typed): a point's problem is the one its `--set` text makes, an override applied to many
 * problems keeps its value, and a grid path that does not parse is reported as `--set`'s.
 */
import { describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { applyOverrides, parseOverride } from '../src/problem/overrides.js';
import { problemFromObject } from '../src/problem/parse.js';
import { pointProblem } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';

describe("a grid point's overrides", () => {
  it('make the problem its --set text makes', () => {
    const sweep = sweepFromObject({
      problem: 'hot-prefix',
      grid: { 'gpu.slots': [8, 16], 'router.policy': ['least-loaded', 'prefix-affinity'], 'traffic.warmup': ['5s'] },
      seeds: 2,
    });
    for (const point of sweep.points) {
      const text = point.overrides.map((o) => (typeof o === 'string' ? o : o.text));
      expect(pointProblem(sweep, point)).toEqual(problemFromObject(sweep.problemRaw, text, sweep.problemSource));
    }
    // axis values are shared by the points that take them, not parsed per point
    expect(sweep.points[0]!.overrides[0]).toBe(sweep.points[1]!.overrides[0]);
  });

  it('keep their values when a later override changes a field inside one', () => {
    const scenarios = parseOverride('scenarios={busy: {rateScale: 2}}');
    type Raw = { scenarios: { busy: { rateScale: number } } };
    const first = applyOverrides({}, [scenarios, 'scenarios.busy.rateScale=3']) as Raw;
    const second = applyOverrides({}, [scenarios]) as Raw;
    expect(first.scenarios.busy.rateScale).toBe(3);
    expect(second.scenarios.busy.rateScale).toBe(2);
    expect(scenarios.value).toEqual({ busy: { rateScale: 2 } });
  });

  it('name a grid path that does not parse as --set does, at the first point', () => {
    let err: unknown;
    try {
      sweepFromObject({ problem: 'mmc', grid: { 'server..slots': [4, 5] } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as ServesimError).message).toMatch(/^grid: grid point 0 \(server\.\.slots=4\): invalid --set: server\.\.slots: not a field path/);
  });
});
