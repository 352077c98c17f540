/**
 * What one benchmark measurement is, how it is timed within a budget, and how it prints.
 *
 * "Simulated requests" are arrivals, warm-up included: all the work an instance does.
 */
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { decodeResult } from '../src/engine/result.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';

/** Runs instances 0 .. n - 1 of base seed 1 and returns their result records. */
export type EngineRun = (config: EngineConfig, instances: number) => Promise<Uint32Array>;

export interface Row {
  problem: string;
  engine: string;
  instances: number;
  /** Null when the run was skipped: its predicted time was over the budget. */
  seconds: number | null;
  simulatedRequests: number | null;
  requestsPerSecond: number | null;
  instancesPerSecond: number | null;
  eventsPerSecond: number | null;
  /** One instance's state record (what the GPU engine keeps per instance). */
  stateBytes: number;
  /** Simulated seconds per instance (warm-up and measured window): work = instances x this. */
  horizonSeconds: number;
  /** Why the row has no figures. */
  skipped?: string;
}

export interface Measured {
  readonly row: Row;
  /** Null when skipped. */
  readonly records: Uint32Array | null;
}

const root = new URL('../../', import.meta.url);

export function configOf(name: string, sets: readonly string[]): EngineConfig {
  const problem = loadProblem(fileURLToPath(new URL(`problems/${name}.yaml`, root)), sets);
  return compile(problem, selectCases(problem, ['as-given'])[0]!);
}

/** FNV-1a over result records: equal records, equal hash (for comparing runs in reports). */
export function hashOf(records: Uint32Array): number {
  let h = 0x811c9dc5;
  for (const v of records) h = Math.imul(h ^ v, 0x01000193) >>> 0;
  return h;
}

/** The machine a report's figures come from: its CPUs, memory and Node.js. */
export function machine(): string {
  return `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

export function label(problem: string, sets: readonly string[]): string {
  return [problem, ...sets].join(' ');
}

/** Simulated requests (arrivals, warm-up included) and events of the instances whose records these are. */
export function work(config: EngineConfig, records: Uint32Array): { arrivals: number; events: number } {
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

/** Simulated instance-seconds: what an engine's time grows with. */
function size(r: Pick<Row, 'instances' | 'horizonSeconds'>): number {
  return r.instances * r.horizonSeconds;
}

/**
 * The seconds a run of `work` would take, from the same engine's last two (smaller) runs: the
 * last one plus the extra work at the marginal cost between the two (a GPU's first instances
 * cost little more than one). Null with fewer than two.
 */
function predict(history: readonly Row[], work: number): number | null {
  const [q, p] = history.slice(-2);
  if (q?.seconds == null || p?.seconds == null) return null;
  const slope = Math.max(0, (p.seconds - q.seconds) / (size(p) - size(q)));
  return p.seconds + (work - size(p)) * slope;
}

function runName(r: Row, problem: string): string {
  return r.problem === problem ? `${r.instances} instance${r.instances === 1 ? '' : 's'}` : `${r.problem} x ${r.instances}`;
}

/**
 * Times `run` on `instances` instances, unless `history` (the same engine on less work, in
 * order) was over `budget` seconds or predicts this run to be.
 */
export async function measure(
  run: EngineRun,
  config: EngineConfig,
  problem: string,
  engine: string,
  instances: number,
  budget: number,
  history: readonly Row[] = [],
): Promise<Measured> {
  const horizonSeconds = config.params[P.MEASURE_END]! / 1e6;
  const base: Row = { problem, engine, instances, seconds: null, simulatedRequests: null, requestsPerSecond: null, instancesPerSecond: null, eventsPerSecond: null, stateBytes: config.stateWords * 4, horizonSeconds };
  const last = history.at(-1);
  if (last !== undefined && last.seconds === null) {
    return { row: { ...base, skipped: `not run, as the run on ${runName(last, problem)} was not run either` }, records: null };
  }
  const predicted = predict(history, size(base));
  if (predicted !== null && predicted > budget) {
    const from = `${runName(history.at(-2)!, problem)} and ${runName(last!, problem)}`;
    return { row: { ...base, skipped: `not run: about ${Math.round(predicted)} s predicted from the runs on ${from}, over the budget of ${budget} s (--budget)` }, records: null };
  }
  process.stderr.write(`bench: ${problem} · ${engine} · ${instances} ...\n`);
  const t0 = performance.now();
  const records = await run(config, instances);
  const seconds = (performance.now() - t0) / 1000;
  const w = work(config, records);
  return {
    row: {
      ...base,
      seconds,
      simulatedRequests: Math.round(w.arrivals),
      requestsPerSecond: Math.round(w.arrivals / seconds),
      instancesPerSecond: Math.round((instances / seconds) * 10) / 10,
      eventsPerSecond: Math.round(w.events / seconds),
    },
    records,
  };
}

/** One line on stderr per measurement, so a long run shows where it is. */
export function logRow(r: Row): void {
  const what = r.seconds === null ? r.skipped : `${r.seconds.toFixed(1)} s, ${figure(r.instancesPerSecond)} instances/s`;
  process.stderr.write(`bench: ${r.problem} · ${r.engine} · ${r.instances}: ${what}\n`);
}

function figure(n: number | null): string {
  return n === null ? '–' : n.toLocaleString('en');
}

/** `kernel / pool`, or a dash where either was not run. */
export function ratio(a: Row | undefined, b: Row | undefined): string {
  if (a?.requestsPerSecond == null || b?.requestsPerSecond == null) return '–';
  return (a.requestsPerSecond / b.requestsPerSecond).toFixed(a.requestsPerSecond < b.requestsPerSecond / 10 ? 3 : 2);
}

/** Rows as a Markdown table; `extra` adds columns (header, then a cell per row). */
export function table(rows: readonly Row[], extra: readonly { header: string; cell: (r: Row, i: number) => string }[] = []): string {
  const notes: string[] = [];
  const lines = rows.map((r, i) => {
    let skipped = '';
    if (r.skipped !== undefined) {
      notes.push(r.skipped);
      skipped = ` [${notes.length}]`;
    }
    const cells = [r.problem, r.engine, String(r.instances) + skipped, figure(r.requestsPerSecond), figure(r.instancesPerSecond), figure(r.eventsPerSecond), r.stateBytes.toLocaleString('en'), ...extra.map((e) => e.cell(r, i))];
    return `| ${cells.join(' | ')} |`;
  });
  return [
    `| problem | engine | instances | simulated requests/s | instances/s | events/s | state bytes/instance |${extra.map((e) => ` ${e.header} |`).join('')}`,
    `| --- | --- | ---: | ---: | ---: | ---: | ---: |${extra.map(() => ' ---: |').join('')}`,
    ...lines,
    ...(notes.length === 0 ? [] : ['', ...notes.map((n, i) => `[${i + 1}] ${n}`)]),
  ].join('\n');
}

/** "yes", or how many of the instances' records differ. */
export function sameRecords(config: EngineConfig, a: Uint32Array | null, b: Uint32Array | null): string {
  if (a === null || b === null) return '–';
  let differ = 0;
  for (let i = 0; i < a.length / config.resultWords; i++) {
    const at = i * config.resultWords;
    for (let k = 0; k < config.resultWords; k++) {
      if (a[at + k] !== b[at + k]) {
        differ++;
        break;
      }
    }
  }
  return differ === 0 && a.length === b.length ? 'yes' : `NO: ${differ} differ`;
}
