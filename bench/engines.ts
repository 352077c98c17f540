/**
 * `npm run bench`: simulated requests per second and instances per second of each engine on
 * the same work, printed as a Markdown table and written to bench/results/. Asserts nothing.
 *
 * "Simulated requests" are arrivals, warm-up included: all the work an instance does.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { decodeResult } from '../src/engine/result.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { SimulationPool } from '../src/pool/pool.js';
import { packageVersion } from '../src/cli/version.js';
import type { Problem } from '../src/model/problem.js';
import { loadSweep } from '../src/sweep/spec.js';
import { runSweep } from '../src/sweep/run.js';
import { closeEngines } from '../src/run/run.js';
import { hintRequestSchema, type HintRequest } from '../src/hint/api.js';
import { runHints } from '../src/hint/search.js';

interface Row {
  problem: string;
  engine: string;
  instances: number;
  seconds: number;
  simulatedRequests: number;
  requestsPerSecond: number;
  instancesPerSecond: number;
  eventsPerSecond: number;
  /** One instance's state record (what the GPU engine keeps per instance). */
  stateBytes: number;
}

const root = new URL('../../', import.meta.url);
const WORK: { problem: string; sets: string[]; instances: number }[] = [
  { problem: 'mmc', sets: [], instances: 64 },
  { problem: 'hot-prefix', sets: [], instances: 64 },
  { problem: 'hot-prefix', sets: ['router.policy=least-loaded', 'gpu.slots=16'], instances: 64 },
  { problem: 'coding-agents', sets: [], instances: 16 },
  { problem: 'coding-agents', sets: ['router.policy=prefix-affinity'], instances: 16 },
];

function work(config: EngineConfig, records: Uint32Array): { arrivals: number; events: number } {
  let arrivals = 0;
  let events = 0;
  const window = config.measuredMicros;
  const total = config.params[P.MEASURE_END]!; // warm-up + measured window
  for (let i = 0; i < records.length / config.resultWords; i++) {
    const r = decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords));
    arrivals += (r.arrivals * total) / window;
    events += r.events;
  }
  return { arrivals, events };
}

function row(config: EngineConfig, problem: string, engine: string, instances: number, seconds: number, w: { arrivals: number; events: number }): Row {
  return {
    problem,
    engine,
    instances,
    seconds,
    simulatedRequests: Math.round(w.arrivals),
    requestsPerSecond: Math.round(w.arrivals / seconds),
    instancesPerSecond: Math.round((instances / seconds) * 10) / 10,
    eventsPerSecond: Math.round(w.events / seconds),
    stateBytes: config.stateWords * 4,
  };
}

function table(rows: readonly Row[]): string {
  return [
    '| problem | engine | instances | simulated requests/s | instances/s | events/s | state bytes/instance |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.problem} | ${r.engine} | ${r.instances} | ${r.requestsPerSecond.toLocaleString('en')} | ${r.instancesPerSecond} | ${r.eventsPerSecond.toLocaleString('en')} | ${r.stateBytes.toLocaleString('en')} |`),
  ].join('\n');
}

function configOf(name: string, sets: readonly string[]): { problem: Problem; config: EngineConfig } {
  const problem = loadProblem(fileURLToPath(new URL(`problems/${name}.yaml`, root)), sets);
  return { problem, config: compile(problem, selectCases(problem, ['as-given'])[0]!) };
}

async function timePool(pool: SimulationPool, config: EngineConfig, instances: number): Promise<[number, Uint32Array]> {
  const t0 = performance.now();
  const records = await pool.run(config, 1, 0, instances);
  return [(performance.now() - t0) / 1000, records];
}

async function main(): Promise<void> {
  const pool = new SimulationPool();
  const poolName = `pool (${pool.threads} threads)`;
  const sections: string[] = [];
  const json: Record<string, unknown> = {};

  // every engine on the same work
  const rows: Row[] = [];
  for (const item of WORK) {
    const { config } = configOf(item.problem, item.sets);
    const label = [item.problem, ...item.sets].join(' ');
    runReference(config, 1, 0, 2); // warm the JIT
    const t0 = performance.now();
    const reference = runReference(config, 1, 0, item.instances);
    rows.push(row(config, label, 'reference (1 thread)', item.instances, (performance.now() - t0) / 1000, work(config, reference)));
    await pool.run(config, 1, 0, pool.threads * 8); // warm the workers' JIT
    const instances = item.instances * pool.threads * 2;
    const [seconds, pooled] = await timePool(pool, config, instances);
    rows.push(row(config, label, poolName, instances, seconds, work(config, pooled)));
  }
  const ratios = WORK.map((item, i) => `${[item.problem, ...item.sets].join(' ')}: ${(rows[2 * i + 1]!.requestsPerSecond / rows[2 * i]!.requestsPerSecond).toFixed(2)}`);
  sections.push(`## Engines on the same work\n\n${table(rows)}\n\nPool / reference (simulated requests/s): ${ratios.join('; ')}. The WGSL engine is not benchmarked yet (see the README).`);
  json['engines'] = rows;

  // scaling in instances, and in simulated horizon
  const scaling: Row[] = [];
  const mmc = configOf('mmc', []);
  for (const instances of [1, 16, 256, 4096, 65536]) {
    const [seconds, records] = await timePool(pool, mmc.config, instances);
    scaling.push(row(mmc.config, 'mmc', poolName, instances, seconds, work(mmc.config, records)));
  }
  for (const duration of [200, 800, 3200]) {
    const { config } = configOf('mmc', [`traffic.duration=${duration}s`]);
    const [seconds, records] = await timePool(pool, config, 256);
    scaling.push(row(config, `mmc traffic.duration=${duration}s`, poolName, 256, seconds, work(config, records)));
  }
  sections.push(`## Scaling in instances and in simulated horizon\n\n${table(scaling)}`);
  json['scaling'] = scaling;

  // sweeps and hint searches
  const sweepRows: string[] = [];
  const sweepJson: unknown[] = [];
  for (const file of ['hot-prefix-slots', 'coding-agents-replicas']) {
    const sweep = loadSweep(fileURLToPath(new URL(`sweeps/${file}.yaml`, root)), { engine: 'cpu' });
    const t0 = performance.now();
    const outcome = await runSweep(sweep);
    const seconds = (performance.now() - t0) / 1000;
    const arrivals = outcome.rows.reduce((sum, r) => sum + r.summary.requests, 0);
    const entry = { sweep: file, engine: outcome.meta.engine, points: outcome.finished.length, cases: sweep.caseNames.length, seeds: sweep.seeds, seconds, pointsPerSecond: outcome.finished.length / seconds, measuredRequestsPerSecond: arrivals / seconds };
    sweepJson.push(entry);
    sweepRows.push(`| ${file} | ${entry.engine} | ${entry.points} x ${entry.cases} cases x ${entry.seeds} seeds | ${seconds.toFixed(1)} | ${entry.pointsPerSecond.toFixed(2)} | ${Math.round(entry.measuredRequestsPerSecond).toLocaleString('en')} |`);
  }
  const hints: { request: HintRequest; label: string }[] = [
    { label: 'hot-prefix: router.policy (least-loaded, cache-aware) x gpu.slots 2..32', request: { problem: 'hot-prefix', vary: { 'router.policy': ['least-loaded', 'cache-aware'], 'gpu.slots': { from: 2, to: 32, step: 1 } }, seeds: 32, engine: 'cpu' } },
    { label: 'coding-agents: prefix-affinity, gpu.replicas 4..12 x gpu.slots 1..6', request: { problem: 'coding-agents', vary: { 'router.policy': ['prefix-affinity'], 'gpu.replicas': { from: 4, to: 12, step: 1 }, 'gpu.slots': { from: 1, to: 6, step: 1 } }, seeds: 16, engine: 'cpu' } },
  ];
  const hintRows: string[] = [];
  const hintJson: unknown[] = [];
  for (const { label, request } of hints) {
    const t0 = performance.now();
    const result = await runHints(hintRequestSchema.parse(request));
    const seconds = (performance.now() - t0) / 1000;
    hintJson.push({ label, evaluated: result.evaluated, gridSize: result.gridSize, seconds });
    hintRows.push(`| ${label} | ${result.evaluated} | ${result.gridSize} | ${seconds.toFixed(1)} |`);
  }
  sections.push([
    '## Sweeps and hint searches',
    '',
    '| sweep file | engine | work | seconds | grid points/s | measured requests/s |',
    '| --- | --- | --- | ---: | ---: | ---: |',
    ...sweepRows,
    '',
    '| hint search | points evaluated | grid points | seconds |',
    '| --- | ---: | ---: | ---: |',
    ...hintRows,
  ].join('\n'));
  json['sweeps'] = sweepJson;
  json['hints'] = hintJson;
  await pool.close();
  await closeEngines();

  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const header = `servesim ${packageVersion()} · ${machine} · no WebGPU engine yet · ${new Date().toISOString()}`;
  const text = `${header}\n\n${sections.join('\n\n')}`;
  console.log(text);
  const out = new URL('bench/results/', root);
  mkdirSync(out, { recursive: true });
  writeFileSync(new URL('latest.json', out), `${JSON.stringify({ header, machine, ...json }, null, 2)}\n`);
  writeFileSync(new URL('latest.md', out), `# Benchmark\n\nCommand: \`npm run bench\`\n\n${text}\n`);
}

await main();
