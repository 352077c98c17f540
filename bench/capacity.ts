/**
 * The capacity search against a hint over the same grid (`npm run bench`, section `capacity`):
 * the README's hot-prefix grid, routers x slots, each on the pool (and as `--engine auto` runs
 * them where a kernel beats the pool), timed as the commands run them; the ratio of their
 * seconds is what issue 31 holds the capacity search to (at most 3x).
 */
import { capacityRequestSchema, type CapacityRequest } from '../src/capacity/api.js';
import { runCapacity } from '../src/capacity/search.js';
import { hintRequestSchema } from '../src/hint/api.js';
import { runHints } from '../src/hint/search.js';
import type { EngineChoice } from '../src/run/types.js';

/** The README's hint: load-spreading routers against slots per replica. */
const GRID: CapacityRequest['vary'] = { 'router.policy': ['least-loaded', 'cache-aware'], 'gpu.slots': { from: 2, to: 32, step: 1 } };

export interface CapacityRow {
  readonly engine: string;
  readonly hintSeconds: number;
  /** CPU seconds of the process (every thread of the pool), which other work on a shared machine does not inflate. */
  readonly hintCpuSeconds: number;
  readonly hintInstances: number;
  readonly hintRounds: number;
  readonly capacitySeconds: number;
  readonly capacityCpuSeconds: number;
  readonly capacityInstances: number;
  /**
   * Of those, the instances of the cases each capacity rests on, run at that load: the decided
   * PASS every design's capacity must be, which no search order saves.
   */
  readonly atCapacityInstances: number;
  readonly capacityRounds: number;
  readonly front: number;
}

/** Starts a clock: the seconds, and the CPU seconds of this process (all its threads), since. */
function timer(): () => [number, number] {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  return () => {
    const cpu = process.cpuUsage(cpu0);
    return [(performance.now() - t0) / 1000, (cpu.user + cpu.system) / 1e6];
  };
}

/**
 * The hint, then the capacity search, on the pool and, with `auto`, as `--engine auto` runs them
 * where the kernel beats the pool (a measured crossover; on llvmpipe it never does, and the
 * kernel alone would take hours).
 */
export async function capacityVsHint(withAuto: boolean): Promise<{ text: string; rows: CapacityRow[] }> {
  const engines: EngineChoice[] = withAuto ? ['cpu', 'auto'] : ['cpu'];
  const rows: CapacityRow[] = [];
  for (const engine of engines) {
    const hintTime = timer();
    const hint = await runHints(hintRequestSchema.parse({ problem: 'hot-prefix', vary: GRID, engine }));
    const [hintSeconds, hintCpuSeconds] = hintTime();
    const capacityTime = timer();
    const capacity = await runCapacity(capacityRequestSchema.parse({ problem: 'hot-prefix', vary: GRID, engine }));
    const [capacitySeconds, capacityCpuSeconds] = capacityTime();
    rows.push({
      engine: engine === 'cpu' ? 'pool' : `auto (${capacity.engine ?? 'none'})`,
      hintSeconds,
      hintCpuSeconds,
      hintInstances: hint.instances,
      hintRounds: hint.rounds,
      capacitySeconds,
      capacityCpuSeconds,
      capacityInstances: capacity.instances,
      atCapacityInstances: capacity.designs.reduce((sum, d) => sum + d.cases.filter((c) => c.rate_scale === d.rate_scale).reduce((n, c) => n + c.seeds, 0), 0),
      capacityRounds: capacity.rounds,
      front: capacity.designs.filter((d) => d.pareto).length,
    });
    console.error(
      `capacity vs hint, ${engine}: ${capacitySeconds.toFixed(1)} s against ${hintSeconds.toFixed(1)} s, ${(capacitySeconds / hintSeconds).toFixed(2)}x; ` +
        `CPU ${capacityCpuSeconds.toFixed(1)} s against ${hintCpuSeconds.toFixed(1)} s, ${(capacityCpuSeconds / hintCpuSeconds).toFixed(2)}x`,
    );
  }
  const lines = rows.map(
    (r) =>
      `| ${r.engine} | ${r.hintSeconds.toFixed(1)} | ${r.hintCpuSeconds.toFixed(1)} | ${r.hintInstances.toLocaleString('en')} | ${r.hintRounds} | ${r.capacitySeconds.toFixed(1)} | ` +
      `${r.capacityCpuSeconds.toFixed(1)} | ${r.capacityInstances.toLocaleString('en')} | ${r.atCapacityInstances.toLocaleString('en')} | ${r.capacityRounds} | ${r.front} | ${(r.capacitySeconds / r.hintSeconds).toFixed(2)} | ` +
      `${(r.capacityCpuSeconds / r.hintCpuSeconds).toFixed(2)} |`,
  );
  const text = [
    '## Capacity search against a hint',
    '',
    '`servesim capacity` and `servesim hint` on hot-prefix over router.policy (least-loaded, cache-aware) x gpu.slots 2..32, 62 designs, both with `--seeds auto`: the hint looks for the cheapest passing design, the capacity search for every design\'s highest passing load (to within 2%) and the Pareto front of cost against it. "ratio" is the capacity search\'s seconds over the hint\'s (issue 31 asks for at most 3); "CPU ratio" the same of the CPU seconds of the process, its pool\'s threads included, which work of other processes on a shared machine does not inflate as it does the seconds; "at capacity" counts the instances of the cases each design\'s capacity rests on, run at that load (a decided PASS, which every design needs whatever the search\'s order). An "auto" row is there only where a kernel beats the pool (a measured crossover).',
    '',
    '| engine | hint s | hint CPU s | hint instances | hint rounds | capacity s | capacity CPU s | capacity instances | at capacity | capacity rounds | front | ratio | CPU ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
  ].join('\n');
  return { text, rows };
}
