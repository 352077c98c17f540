/**
 * `npm run build && node dist/bench/grid-points.js`: what building a sweep's grid point costs.
 * A point's problem is built twice (sweepFromObject checks every point before any work, the
 * run builds it again); each build applies the point's overrides, parsed once per axis value
 * (GridPoint.overrides). Times both builds per point, and one build from the parsed overrides
 * against the same overrides as `--set` text parsed again, on this build: the process's CPU
 * time (so that other processes on a shared machine count less), the best of 40 runs, in ms
 * per point. Asserts nothing.
 */
import { applyOverrides } from '../src/problem/overrides.js';
import { problemFromObject } from '../src/problem/parse.js';
import { pointProblem } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';

const RUNS = 40;
const GRID = { 'gpu.slots': { from: 4, to: 63, step: 1 }, 'router.policy': ['least-loaded', 'prefix-affinity', 'round-robin'], 'traffic.rate': [10, 20] };

/** The least CPU time `f` took over RUNS runs, per point. */
function best(points: number, f: () => void): string {
  let min = Number.POSITIVE_INFINITY;
  for (let run = 0; run < RUNS; run++) {
    const start = process.cpuUsage();
    f();
    const used = process.cpuUsage(start);
    min = Math.min(min, (used.user + used.system) / 1000);
  }
  return (min / points).toFixed(3);
}

for (const problem of ['hot-prefix', 'coding-agents']) {
  const sweep = sweepFromObject({ problem, grid: GRID, seeds: 8 }, { maxInstances: Number.MAX_SAFE_INTEGER });
  const n = sweep.points.length;
  const parsed = sweep.points.map((p) => p.overrides);
  const text = parsed.map((overrides) => overrides.map((o) => (typeof o === 'string' ? o : o.text)));
  const build = (overrides: typeof parsed | typeof text) => () => {
    for (const o of overrides) problemFromObject(sweep.problemRaw, o, sweep.problemSource);
  };
  const apply = (overrides: typeof parsed | typeof text) => () => {
    for (const o of overrides) applyOverrides(sweep.problemRaw, o);
  };
  console.log(`${problem}, ${n} points of ${sweep.axes.length} overrides, ms per point (best of ${RUNS}):`);
  console.log(`  sweepFromObject ${best(n, () => sweepFromObject({ problem, grid: GRID, seeds: 8 }, { maxInstances: Number.MAX_SAFE_INTEGER }))}, pointProblem ${best(n, () => sweep.points.forEach((p) => pointProblem(sweep, p)))}`);
  console.log(`  a problem from parsed overrides ${best(n, build(parsed))}, from --set text ${best(n, build(text))}`);
  console.log(`  the overrides applied alone: parsed ${best(n, apply(parsed))}, text ${best(n, apply(text))}`);
}
