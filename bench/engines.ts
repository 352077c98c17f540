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

async function main(): Promise<void> {
  const pool = new SimulationPool();
  const rows: Row[] = [];
  for (const item of WORK) {
    const problem = loadProblem(fileURLToPath(new URL(`problems/${item.problem}.yaml`, root)), item.sets);
    const config = compile(problem, selectCases(problem, ['as-given'])[0]!);
    const label = [item.problem, ...item.sets].join(' ');
    runReference(config, 1, 0, 2); // warm the JIT
    let t0 = performance.now();
    const reference = runReference(config, 1, 0, item.instances);
    rows.push(row(config, label, 'reference (1 thread)', item.instances, (performance.now() - t0) / 1000, work(config, reference)));
    await pool.run(config, 1, 0, pool.threads * 2);
    t0 = performance.now();
    const pooled = await pool.run(config, 1, 0, item.instances * pool.threads);
    rows.push(row(config, label, `pool (${pool.threads} threads)`, item.instances * pool.threads, (performance.now() - t0) / 1000, work(config, pooled)));
  }
  await pool.close();

  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const header = `servesim ${packageVersion()} · ${machine} · ${new Date().toISOString()}`;
  const table = [
    '| problem | engine | instances | simulated requests/s | instances/s | events/s | state bytes/instance |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.problem} | ${r.engine} | ${r.instances} | ${r.requestsPerSecond.toLocaleString('en')} | ${r.instancesPerSecond} | ${r.eventsPerSecond.toLocaleString('en')} | ${r.stateBytes.toLocaleString('en')} |`),
  ].join('\n');
  console.log(`${header}\n\n${table}`);
  const out = new URL('bench/results/', root);
  mkdirSync(out, { recursive: true });
  writeFileSync(new URL('latest.json', out), `${JSON.stringify({ header, machine, rows }, null, 2)}\n`);
  writeFileSync(new URL('latest.md', out), `# Benchmark\n\n${header}\n\nCommand: \`npm run bench\`\n\n${table}\n`);
}

await main();
