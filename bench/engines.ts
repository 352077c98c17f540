/**
 * `npm run bench`: simulated requests per second and instances per second of each engine (the
 * reference engine on one thread, the Piscina pool on every core, the WGSL kernel on each
 * adapter) on the same instances, printed as Markdown and written to bench/results/, with the
 * kernel/pool crossover that `--engine auto` goes by. Asserts nothing.
 *
 *   npm run bench -- [--budget SECONDS] [--adapter NAME ...] [--out DIR] [--crossover FILE]
 *
 * A run whose time, predicted from the same engine's last two runs on less work (fewer
 * instances, or a shorter horizon), is over the budget is listed as not run, with the
 * prediction: the kernel on Mesa llvmpipe would take hours at 65,536 instances.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { acquireGpu, adapterWithDriver, type GpuContext } from '../src/gpu/adapter.js';
import { runGpu } from '../src/gpu/engine.js';
import { runReference } from '../src/engine/reference.js';
import { SimulationPool } from '../src/pool/pool.js';
import { packageVersion } from '../src/version.js';
import { parseChoice, parseInteger } from '../src/cli/options.js';
import { loadSweep, sweepFromObject } from '../src/sweep/spec.js';
import { pointProblem, runSweep } from '../src/sweep/run.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import type { EngineChoice } from '../src/run/types.js';
import { CROSSOVER_ABOUT, CROSSOVER_PATH, crossoverOf, loadCrossovers, type AdapterMeasurements, type Measurement } from '../src/run/crossover.js';
import { hintRequestSchema, type HintRequest } from '../src/hint/api.js';
import { runHints } from '../src/hint/search.js';
import { searchCheapest } from '../src/hint/frontier.js';
import type { CaseSummary } from '../src/model/summary.js';
import { capacityVsHint } from './capacity.js';
import { wholeRun } from './whole-run.js';
import { configOf, label, logRow, machine, measure, ratio, sameRecords, table, type EngineRun, type Row } from './measure.js';

const root = new URL('../../', import.meta.url);

/** Every engine on this work, at the pool's instance count. */
const WORK: { problem: string; sets: string[]; instances: number }[] = [
  { problem: 'mmc', sets: [], instances: 256 },
  { problem: 'hot-prefix', sets: [], instances: 256 },
  { problem: 'hot-prefix', sets: ['router.policy=least-loaded', 'gpu.slots=16'], instances: 256 },
  { problem: 'coding-agents', sets: [], instances: 64 },
  { problem: 'coding-agents', sets: ['router.policy=prefix-affinity'], instances: 64 },
];
const SCALING_PROBLEMS = ['mmc', 'hot-prefix', 'coding-agents'];
const SCALING_INSTANCES = [1, 16, 256, 4096, 65536];
const HORIZONS = [200, 800, 3200];

/** The sections `--only` may name, in the order they run. */
const SECTIONS = ['engines', 'scaling', 'horizon', 'whole', 'capacity', 'mm8'] as const;
type SectionName = (typeof SECTIONS)[number];

interface Options {
  budget: number;
  adapter: string[];
  out: string;
  crossover: string;
  only: SectionName[];
}

function parseOptions(): Options {
  return new Command('bench')
    .addOption(new Option('--budget <seconds>', 'longest predicted time of one measurement').argParser((t) => parseInteger(t, '--budget', 1, 86_400)).default(240))
    .addOption(new Option('--adapter <name>', 'a WebGPU adapter to run the kernel on, repeatable (default: the one the engine picks)').argParser((t: string, prev: string[]) => [...prev, t]).default([]))
    .addOption(new Option('--out <dir>', 'where to write latest.md and latest.json (with --only: latest-SECTIONS.md and .json)').default(fileURLToPath(new URL('bench/results/', root))))
    .addOption(new Option('--crossover <file>', 'the crossover table to add the adapters\' figures to (default: the one --engine auto reads)').default(fileURLToPath(new URL(CROSSOVER_PATH, root))))
    .addOption(
      new Option('--only <section>', `run only these sections, repeatable: ${SECTIONS.join(', ')} (the crossover needs scaling)`)
        .argParser((t: string, prev: SectionName[]) => [...prev, parseChoice(t, '--only', SECTIONS)])
        .default([]),
    )
    .parse()
    .opts<Options>();
}

interface Engine {
  readonly name: string;
  readonly run: EngineRun;
}

interface Kernel extends Engine {
  readonly ctx: GpuContext;
}

/** The adapters asked for (or the engine's own pick), with the kernel compiled on each. */
async function openKernels(names: readonly string[], about: string[]): Promise<Kernel[]> {
  const kernels: Kernel[] = [];
  for (const adapter of names.length === 0 ? [undefined] : names) {
    let ctx: GpuContext;
    try {
      ctx = await acquireGpu({ adapter });
    } catch (err) {
      about.push(`no kernel rows${adapter === undefined ? '' : ` for '${adapter}'`}: ${(err as Error).message}`);
      continue;
    }
    const t0 = performance.now();
    await runGpu(ctx, configOf('mmc', []), 1, 0, 1);
    about.push(`kernel on ${adapterWithDriver(ctx)}: compiled for M/M/c and first instance run in ${((performance.now() - t0) / 1000).toFixed(1)} s (a driver may serve it from its on-disk shader cache); each problem's shape is compiled before it is measured`);
    kernels.push({ name: `kernel (${ctx.adapterName})`, ctx, run: (config, n) => runGpu(ctx, config, 1, 0, n) });
  }
  return kernels;
}

/** One table's rows; a kernel row also has the pool's row on the same instances. */
class Section {
  readonly rows: Row[] = [];
  private readonly sameRecords = new Map<Row, string>();
  private readonly poolRow = new Map<Row, Row>();

  add(row: Row, vsPool?: { pool: Row; same: string }): void {
    logRow(row);
    this.rows.push(row);
    if (vsPool === undefined) return;
    this.poolRow.set(row, vsPool.pool);
    this.sameRecords.set(row, vsPool.same);
  }

  table(): string {
    return table(this.rows, [
      { header: 'kernel / pool', cell: (r) => (this.poolRow.has(r) ? ratio(r, this.poolRow.get(r)) : '') },
      { header: 'records equal the pool’s', cell: (r) => this.sameRecords.get(r) ?? '' },
    ]);
  }
}

/**
 * Runs the pool and each kernel on the same instances of one problem, into `section`. Each
 * engine's smaller runs here, after those in `earlier` (the same work, less of it), predict
 * whether the next fits the budget.
 */
async function sideBySide(
  section: Section,
  pool: Engine,
  kernels: readonly Kernel[],
  problem: string,
  sets: readonly string[],
  sizes: readonly number[],
  budget: number,
  earlier: readonly Row[] = [],
): Promise<void> {
  const config = configOf(problem, sets);
  const name = label(problem, sets);
  const mine: Row[] = [];
  const history = (engine: string): Row[] => [...earlier, ...mine].filter((r) => r.engine === engine);
  // each configuration shape compiles its own pipeline: not in the measured time
  for (const kernel of kernels) await kernel.run(config, 1);
  for (const n of sizes) {
    const pooled = await measure(pool.run, config, name, pool.name, n, budget, history(pool.name));
    section.add(pooled.row);
    mine.push(pooled.row);
    for (const kernel of kernels) {
      const k = await measure(kernel.run, config, name, kernel.name, n, budget, history(kernel.name));
      section.add(k.row, { pool: pooled.row, same: sameRecords(config, k.records, pooled.records) });
      mine.push(k.row);
    }
  }
}

async function main(): Promise<void> {
  const options = parseOptions();
  const pool = new SimulationPool();
  const pooled: Engine = { name: `pool (${pool.threads} threads)`, run: (config, n) => pool.run(config, 1, 0, n) };
  const about: string[] = [];
  const kernels = await openKernels(options.adapter, about);
  const sections: string[] = [];
  const json: Record<string, unknown> = {};

  const want = (section: SectionName): boolean => options.only.length === 0 || options.only.includes(section);
  // every engine on the same work
  const engines = new Section();
  for (const item of want('engines') ? WORK : []) {
    const config = configOf(item.problem, item.sets);
    runReference(config, 1, 0, 2); // warm the JIT
    engines.add((await measure(async (c, n) => runReference(c, 1, 0, n), config, label(item.problem, item.sets), 'reference (1 thread)', item.instances / 4, options.budget)).row);
    await pool.run(config, 1, 0, pool.threads * 8); // warm the workers' JIT
    await sideBySide(engines, pooled, kernels, item.problem, item.sets, [item.instances], options.budget);
  }
  const perProblem = WORK.map((item) => {
    const name = label(item.problem, item.sets);
    const [reference, pool] = engines.rows.filter((r) => r.problem === name);
    return `${name}: ${ratio(pool, reference)}`;
  });
  if (want('engines')) sections.push(`## Engines on the same work\n\n${engines.table()}\n\nPool / reference (simulated requests/s): ${perProblem.join('; ')}.`);
  json['engines'] = engines.rows;

  // scaling in instances: the pool against each kernel, which gives auto's crossover
  const scaling = new Section();
  for (const problem of want('scaling') ? SCALING_PROBLEMS : []) {
    await sideBySide(scaling, pooled, kernels, problem, [], SCALING_INSTANCES, options.budget);
  }
  if (want('scaling')) sections.push(`## Scaling in instances\n\n${scaling.table()}`);
  json['scaling'] = scaling.rows;

  // scaling in simulated horizon
  const horizon = new Section();
  for (const duration of want('horizon') ? HORIZONS : []) {
    await sideBySide(horizon, pooled, kernels, 'mmc', [`traffic.duration=${duration}s`], [256], options.budget, [...horizon.rows]);
  }
  if (want('horizon')) sections.push(`## Scaling in simulated horizon\n\n${horizon.table()}`);
  json['horizon'] = horizon.rows;

  // the crossover, per adapter, from the scaling rows
  const crossovers = loadCrossovers(options.crossover);
  const crossoverLines: string[] = [];
  for (const kernel of want('scaling') ? kernels : []) {
    const problems: Record<string, Measurement[]> = {};
    for (const problem of SCALING_PROBLEMS) {
      problems[problem] = SCALING_INSTANCES.map((instances) => {
        const at = scaling.rows.filter((r) => r.problem === problem && r.instances === instances);
        return {
          instances,
          kernel: at.find((r) => r.engine === kernel.name)?.instancesPerSecond ?? null,
          pool: at.find((r) => r.engine === pooled.name)?.instancesPerSecond ?? null,
        };
      });
    }
    const entry: AdapterMeasurements = { measuredAt: new Date().toISOString(), servesimVersion: packageVersion(), machine: machine(), driver: kernel.ctx.info.description, poolThreads: pool.threads, problems };
    crossovers.adapters[kernel.ctx.adapterName] = entry;
    const c = crossoverOf(entry, pool.threads);
    const largest = Object.entries(problems).map(([problem, ms]) => {
      const both = ms.filter((m) => m.kernel !== null && m.pool !== null).at(-1);
      return both === undefined ? `${problem}: none measured with both` : `${problem} at ${both.instances.toLocaleString('en')}: ${(both.kernel! / both.pool!).toFixed(3)}`;
    });
    crossoverLines.push(
      `- ${kernel.ctx.adapterName}: ` +
        (c === null
          ? `the kernel is slower than the pool of ${pool.threads} threads at the largest size measured with both on some problem, so \`--engine auto\` runs the pool.`
          : `the kernel beats the pool of ${pool.threads} threads on every problem from ${c.toLocaleString('en')} instances, so \`--engine auto\` runs it from there.`) +
        ` Kernel / pool instances/s at the largest size measured with both: ${largest.join('; ')}.`,
    );
  }
  if (want('scaling') && kernels.length > 0) sections.push(`## The crossover \`--engine auto\` goes by\n\nWritten to \`${relative(fileURLToPath(root), options.crossover)}\`.\n\n${crossoverLines.join('\n')}`);

  // whole sweeps and hint searches, as the product runs them: batches by shape over grid points
  if (want('whole')) {
    const whole = await wholeSweeps(kernels.length > 0, options.budget);
    sections.push(whole.text);
    json['wholeSweeps'] = whole.rows;
  }
  // the capacity search against a hint over the same grid, and as auto runs it where a kernel beats the pool
  if (want('capacity')) {
    const measured = loadCrossovers(options.crossover).adapters;
    const kernelWins = kernels.some((k) => measured[k.ctx.adapterName] !== undefined && crossoverOf(measured[k.ctx.adapterName]!, pool.threads) !== null);
    const capacity = await capacityVsHint(kernelWins);
    sections.push(capacity.text);
    json['capacityVsHint'] = capacity.rows;
  }
  // issue 30's run as a whole process on one core, beside the engine alone (bench/whole-run.ts)
  if (want('mm8')) {
    const mm8 = wholeRun();
    sections.push(mm8.text);
    json['mm8'] = mm8.row;
  }
  await pool.close();
  await closeEngines();
  for (const kernel of kernels) kernel.ctx.destroy();

  const header = [
    `servesim ${packageVersion()} · ${machine()} · webgpu (Dawn) ${dependencyVersion('webgpu')} · ${new Date().toISOString()}`,
    '',
    ...about.map((line) => `- ${line}`),
    `- Each measurement runs instances 0..n-1 of base seed 1 once; one whose time, predicted from the same engine's last two runs on less work (fewer instances or a shorter horizon), is over ${options.budget} s is not run.`,
  ].join('\n');
  const text = `${header}\n\n${sections.join('\n\n')}`;
  console.log(text);
  mkdirSync(options.out, { recursive: true });
  // a run of some sections does not replace the whole benchmark's files
  const base = options.only.length === 0 ? 'latest' : `latest-${options.only.join('-')}`;
  writeFileSync(`${options.out}/${base}.json`, `${JSON.stringify({ header, machine: machine(), adapters: kernels.map((k) => k.ctx.adapterName), ...json }, null, 2)}\n`);
  writeFileSync(`${options.out}/${base}.md`, `# Benchmark\n\nCommand: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`\n\n${text}\n`);
  if (want('scaling') && kernels.length > 0) writeFileSync(options.crossover, `${JSON.stringify({ ...crossovers, about: CROSSOVER_ABOUT }, null, 2)}\n`);
}

/** One whole-sweep measurement: a sweep or a hint search on one engine. */
interface WholeRow {
  readonly work: string;
  readonly engine: string;
  readonly instances: number;
  /** Null when not run (predicted over the budget). */
  readonly seconds: number | null;
  /** Of those, the GPU's on its passes (BatchUsed.gpuSeconds); null when no GPU ran it. */
  readonly gpuSeconds: number | null;
  readonly batches: string;
  /** The rows as JSON, to compare engines' tables (not written out). */
  readonly table: string;
  readonly skipped?: string;
}

/** A hot-prefix grid of 432 points x 4 cases x 64 seeds: 110,592 instances. */
const LARGE_GRID = {
  id: 'hot-prefix-large',
  problem: 'hot-prefix',
  grid: {
    'gpu.replicas': { from: 4, to: 12, step: 1 },
    'gpu.slots': { from: 2, to: 32, step: 2 },
    'router.policy': ['least-loaded', 'cache-aware', 'bounded-affinity'],
  },
  cases: 'all',
  seeds: 64,
};
/** docs/cli.md's hint on hot prefix, as it runs now (seeds until decided). */
const HINT: HintRequest = {
  problem: 'hot-prefix',
  vary: { 'router.policy': ['least-loaded', 'cache-aware'], 'gpu.slots': { from: 2, to: 32, step: 1 } },
  seeds: 'auto',
};

/** The issue's bound (#25) on the hint with seeds until decided, over the 32-seed hint before intervals, on the pool. */
const HINT_BOUND = 2;

/**
 * The same hint as servesim answered it before verdicts had intervals, the 32-seed hint #25
 * measures against: the same search, each point judged on 32 seeds by its estimates (no seed
 * overloaded, pooled success and latencies and the pass probability meeting their goals),
 * and no re-check.
 */
async function hintBeforeIntervals(engine: EngineChoice): Promise<{ evaluated: number; gridSize: number; instances: number; rounds: number; answer: string }> {
  const sweep = sweepFromObject({ problem: HINT.problem, grid: HINT.vary, cases: 'all', seeds: 32, engine });
  const { goals, confidence } = sweep.problem;
  const slots = sweep.axes.findIndex((a) => a.path === 'gpu.slots');
  const replicas = sweep.problem.gpu?.replicas ?? 1;
  const meets = (r: CaseSummary): boolean =>
    r.overloaded_seeds === 0 && r.success >= goals.success - 1e-12 && r.p99_ms * 1000 <= goals.p99 && r.pass_probability >= confidence - 1e-12 &&
    (goals.ttftP99 === null || r.ttft_p99_ms * 1000 <= goals.ttftP99) && (goals.tpotP99 === null || r.tpot_p99_ms * 1000 <= goals.tpotP99);
  let instances = 0;
  const outcome = await searchCheapest({
    axes: sweep.axes.map((axis) => ({ values: axis.values, numeric: axis.type !== 'string' })),
    cost: (index) => replicas * (sweep.points[index]!.values[slots] as number),
    evaluate: async (indexes) => {
      const { rows } = await runSweep(sweep, { only: indexes });
      instances += rows.reduce((sum, r) => sum + r.summary.seeds, 0);
      return new Map(indexes.map((index) => [index, { passes: rows.filter((r) => r.point.index === index).every((r) => meets(r.summary)) }]));
    },
  });
  const answer = outcome.found.map((f) => sweep.points[f.index]!.values.join(' ')).join(', ');
  return { evaluated: outcome.evaluated.size, gridSize: sweep.points.length, instances, rounds: outcome.rounds, answer };
}

/**
 * hot-prefix-slots at 16 and 64 seeds, a grid of over 100,000 instances, and a hint search,
 * each on the pool and (with an adapter) the kernel, through runSweep's batches; the first also
 * one grid point at a time on the pool, as sweeps ran before batches. A run predicted (from
 * the same engine's instances/s so far) to take over the budget is not run.
 */
async function wholeSweeps(withKernel: boolean, budget: number): Promise<{ text: string; rows: WholeRow[] }> {
  const slots = (seeds: number) => (engine: EngineChoice) => loadSweep(fileURLToPath(new URL('sweeps/hot-prefix-slots.yaml', root)), { seeds, engine });
  const work = [
    { name: 'hot-prefix-slots, 16 seeds', sweep: slots(16) },
    { name: 'hot-prefix-slots, 64 seeds', sweep: slots(64) },
    { name: 'hot-prefix 9 replicas x 16 slots x 3 policies, 64 seeds', sweep: (engine: EngineChoice) => sweepFromObject(LARGE_GRID, { maxInstances: 200_000, engine }) },
  ];
  const engines: EngineChoice[] = withKernel ? ['cpu', 'gpu'] : ['cpu'];
  // untimed: the pool's workers compile the engine, and each kernel shape its pipeline
  for (const engine of engines) await runSweep(loadSweep(fileURLToPath(new URL('sweeps/hot-prefix-slots.yaml', root)), { seeds: 2, engine }));
  const rows: WholeRow[] = [];
  // each row on stderr as it ends, so that a run stopped at its time limit keeps what finished
  const push = (row: WholeRow): void => {
    rows.push(row);
    const seconds = row.seconds === null ? `not run (${row.skipped})` : `${row.seconds.toFixed(1)} s`;
    process.stderr.write(`bench: ${row.work} · ${row.engine} · ${row.instances}: ${seconds}${row.gpuSeconds === null ? '' : `, GPU ${row.gpuSeconds.toFixed(2)} s`}\n`);
  };
  const rate = new Map<string, number>();
  const skip = (engine: string, instances: number): string | undefined => {
    const perSecond = rate.get(engine);
    const predicted = perSecond === undefined ? 0 : instances / perSecond;
    return predicted > budget ? `predicted ${Math.round(predicted)} s` : undefined;
  };
  for (const { name, sweep: make } of work) {
    for (const engine of engines) {
      const sweep = make(engine);
      const instances = sweep.points.length * sweep.caseNames.length * sweep.seeds;
      const skipped = skip(engine, instances);
      if (skipped !== undefined) {
        push({ work: name, engine: engine === 'cpu' ? 'pool' : engine, instances, seconds: null, gpuSeconds: null, batches: '', table: '', skipped });
        continue;
      }
      const t0 = performance.now();
      const outcome = await runSweep(sweep);
      const seconds = (performance.now() - t0) / 1000;
      rate.set(engine, instances / seconds);
      const label = outcome.meta.adapter === null ? outcome.meta.engine ?? engine : `${outcome.meta.engine} (${outcome.meta.adapter})`;
      const onGpu = outcome.meta.batches.filter((b) => b.gpuSeconds !== undefined);
      const gpuSeconds = onGpu.length === 0 ? null : onGpu.reduce((sum, b) => sum + b.gpuSeconds!, 0);
      push({ work: name, engine: label, instances, seconds, gpuSeconds, batches: String(outcome.meta.batches.length), table: JSON.stringify(outcome.rows) });
    }
    if (name.endsWith('16 seeds')) {
      // as sweeps ran before batches: each grid point's cases on the pool, one point after another
      const sweep = make('cpu');
      const t0 = performance.now();
      const summaries = [];
      for (const point of sweep.points) summaries.push(...(await runProblem(pointProblem(sweep, point), { caseNames: sweep.caseNames, seeds: sweep.seeds, baseSeed: sweep.baseSeed, engine: 'cpu' })).rows.map((summary) => ({ point, summary })));
      const instances = sweep.points.length * sweep.caseNames.length * sweep.seeds;
      push({ work: name, engine: 'pool, one point at a time', instances, seconds: (performance.now() - t0) / 1000, gpuSeconds: null, batches: String(sweep.points.length * sweep.caseNames.length), table: JSON.stringify(summaries) });
    }
  }
  const hintWork = Object.keys(HINT.vary).join(' x ');
  for (const engine of engines) {
    const t0 = performance.now();
    const before = await hintBeforeIntervals(engine);
    const seconds = (performance.now() - t0) / 1000;
    push({
      work: `hint, 32 seeds, before intervals: ${hintWork} (${before.evaluated} of ${before.gridSize} points)`,
      engine: engine === 'cpu' ? 'pool' : engine,
      instances: before.instances,
      seconds,
      gpuSeconds: null,
      batches: `${before.rounds} rounds`,
      table: before.answer,
    });
  }
  for (const engine of engines) {
    const t0 = performance.now();
    const result = await runHints(hintRequestSchema.parse({ ...HINT, engine }));
    const seconds = (performance.now() - t0) / 1000;
    push({
      work: `hint, seeds auto: ${hintWork} (${result.evaluated} of ${result.gridSize} points)`,
      engine: engine === 'cpu' ? 'pool' : result.engine ?? engine,
      instances: result.instances,
      seconds,
      gpuSeconds: result.gpuSeconds,
      batches: `${result.rounds} rounds`,
      table: JSON.stringify(result.hints),
    });
  }
  const pool = (r: WholeRow) => rows.find((o) => o.work === r.work && o.engine === 'pool');
  const lines = rows.map((r) => {
    const p = pool(r);
    const vsPool = p === undefined || p === r || r.seconds === null || p.seconds === null ? '' : (p.seconds / r.seconds).toFixed(2);
    const equal = p === undefined || p === r || r.seconds === null ? '' : r.table === p.table ? 'yes' : 'NO';
    const seconds = r.seconds === null ? `not run (${r.skipped})` : r.seconds.toFixed(1);
    const perSecond = r.seconds === null ? '' : Math.round(r.instances / r.seconds).toLocaleString('en');
    const gpu = r.gpuSeconds === null ? '' : r.gpuSeconds.toFixed(2);
    return `| ${r.work} | ${r.engine} | ${r.instances.toLocaleString('en')} | ${r.batches} | ${seconds} | ${gpu} | ${perSecond} | ${vsPool} | ${equal} |`;
  });
  const text = [
    '## Whole sweeps',
    '',
    'Sweeps and a hint search as `servesim sweep` and `servesim hint` run them, and the hint as it ran before verdicts had intervals: grid points in chunks, each chunk one batch per configuration shape. "batches" counts engine batches (for the hint: rounds); "GPU s" is the part of the seconds the GPU spent on its passes (first write to records read back: the kernel with its submits and read backs, not the compile); "vs pool" is the batched pool\'s seconds over this row\'s; "equal" compares the tables with the batched pool\'s.',
    '',
    '| work | engine | instances | batches | seconds | GPU s | instances/s | vs pool | equal |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...lines,
    ...hintRatio(rows),
  ].join('\n');
  return { text, rows: rows.map(({ table: _table, ...rest }) => rest as WholeRow) };
}

/** The line on #25's bound: the hint with seeds until decided over the 32-seed hint before intervals, both on the pool. */
function hintRatio(rows: readonly WholeRow[]): string[] {
  const onPool = (prefix: string): WholeRow | undefined => rows.find((r) => r.engine === 'pool' && r.work.startsWith(prefix));
  const before = onPool('hint, 32 seeds, before intervals');
  const auto = onPool('hint, seeds auto');
  if (before === undefined || auto === undefined || before.seconds === null || auto.seconds === null) return [];
  const times = auto.seconds / before.seconds;
  return [
    '',
    `The hint with seeds until decided takes ${times.toFixed(2)}x the time of the 32-seed hint before intervals on the pool (${(auto.instances / before.instances).toFixed(2)}x its instances); #25 asks at most ${HINT_BOUND}x.`,
  ];
}

function dependencyVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(fileURLToPath(new URL(`node_modules/${name}/package.json`, root)), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

await main();
