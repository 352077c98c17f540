/**
 * Per-request records (`--requests-out`): one row per counted arrival of a case's first seeds,
 * and for an agent task one more per model call, as the reference engine tells them while it
 * runs those seeds again on this thread (RequestRecorder in src/engine/simulate.ts). The seeds'
 * records are the run's own, bit for bit, whichever engine ran it: every engine gives the same
 * instance the same records, and the rows are checked against the run's counts. A run that
 * does not ask pays nothing: the engine's recorder is null, and no seed runs twice.
 */
import type { EngineConfig } from '../engine/compile.js';
import { KIND, P, R } from '../engine/layout.js';
import { runReference } from '../engine/reference.js';
import type { RequestRecorder } from '../engine/simulate.js';
import type { InstanceResult } from '../model/result.js';
import { ServesimError } from '../errors.js';
import { MAX_REQUEST_ROWS } from './limits.js';
import type { ConfigurationSeeds, PointsRunOptions } from './points.js';
import type { RecordColumn } from './seed-records.js';

/** A row: an arrival of a seed of a case, or a model call of an agent task. Durations in milliseconds; NaN: none (null in a table). */
export interface RequestRecord {
  readonly case: string;
  readonly seed: number;
  readonly arrival: number;
  readonly call: number;
  readonly arrival_s: number;
  readonly outcome: string;
  readonly failed_at: string;
  readonly latency_ms: number;
  readonly ttft_ms: number;
  readonly itl_mean_ms: number;
  readonly output_tokens: number;
  readonly cached_tokens: number;
  readonly computed_prompt_tokens: number;
  readonly replica: number;
  readonly queue_wait_ms: number;
  readonly preemptions: number;
  readonly tool_wait_ms: number;
}

/** The columns of a per-request table, in table order (docs/outputs.md, "Per-request records"). */
export const REQUEST_COLUMNS: readonly RecordColumn<RequestRecord>[] = [
  { name: 'case', kind: 'text', meaning: 'the case', value: (r) => r.case },
  { name: 'seed', kind: 'count', meaning: "the instance's index under the run's base seed (servesim.base_seed)", value: (r) => r.seed },
  { name: 'arrival', kind: 'count', meaning: 'the arrival (request, task or job): its number in the instance, from 0 at time 0, warm-up included', value: (r) => r.arrival },
  { name: 'call', kind: 'count', nullable: true, meaning: "the model call: a request's one call 0, a task's calls its steps 0, 1, ...; null on a task's own row and a job's", value: (r) => r.call },
  { name: 'arrival_s', kind: 'number', meaning: 'when the arrival came, seconds from the instance\'s start (the measured window starts at the warm-up)', value: (r) => r.arrival_s },
  { name: 'outcome', kind: 'text', meaning: "the arrival's: success, rejected, timed_out, died or overloaded (a call's row carries its task's)", value: (r) => r.outcome },
  { name: 'failed_at', kind: 'text', meaning: "where it failed: app, orchestrator, router, gpu, tools or server ('' for a success or an overload)", value: (r) => r.failed_at },
  { name: 'latency_ms', kind: 'number', meaning: "from arrival to resolution: a success's end-to-end latency, a failure's time to fail (null on a task's call rows)", value: (r) => r.latency_ms },
  { name: 'ttft_ms', kind: 'number', meaning: 'the call\'s time to first token, from when it set out (null without a finished call)', value: (r) => r.ttft_ms },
  { name: 'itl_mean_ms', kind: 'number', meaning: 'the call\'s mean inter-token latency: (end - first token) / (output tokens - 1), unfloored (null under two tokens)', value: (r) => r.itl_mean_ms },
  { name: 'output_tokens', kind: 'count', nullable: true, meaning: "the call's output tokens", value: (r) => r.output_tokens },
  { name: 'cached_tokens', kind: 'count', nullable: true, meaning: "the call's prompt tokens found in its replica's KV cache", value: (r) => r.cached_tokens },
  { name: 'computed_prompt_tokens', kind: 'count', nullable: true, meaning: "the call's prompt tokens prefilled: its prompt less the cached ones", value: (r) => r.computed_prompt_tokens },
  { name: 'replica', kind: 'count', nullable: true, meaning: 'the GPU replica that ran the call, from 0', value: (r) => r.replica },
  { name: 'queue_wait_ms', kind: 'number', meaning: "the call's wait in its GPU replica's queue, summed over tries where a replica died under it (a job's: the server's queue)", value: (r) => r.queue_wait_ms },
  { name: 'preemptions', kind: 'count', nullable: true, meaning: "times the call was preempted before it finished (gpu.kv incremental: its KV freed when a step found none left, to resume later and recompute its prompt and the tokens it had generated; always 0 under reserve)", value: (r) => r.preemptions },
  { name: 'tool_wait_ms', kind: 'number', meaning: "a task's waits in the tools' queue, summed over its tool calls (its own row only)", value: (r) => r.tool_wait_ms },
];

/** Outcome and where, by the R counter a resolution counts in. */
const OUTCOMES: Readonly<Record<number, readonly [outcome: string, at: string]>> = {
  [R.SUCCESSES]: ['success', ''],
  [R.REJECTED_AT_APP]: ['rejected', 'app'],
  [R.REJECTED_AT_ORCH]: ['rejected', 'orchestrator'],
  [R.REJECTED_AT_ROUTER]: ['rejected', 'router'],
  [R.REJECTED_AT_GPU]: ['rejected', 'gpu'],
  [R.TIMED_OUT_AT_ROUTER]: ['timed_out', 'router'],
  [R.TIMED_OUT_AT_GPU]: ['timed_out', 'gpu'],
  [R.TIMED_OUT_AT_TOOLS]: ['timed_out', 'tools'],
  [R.TIMED_OUT_AT_SERVER]: ['timed_out', 'server'],
  [R.DIED]: ['died', 'gpu'],
  [R.OVERLOADED]: ['overloaded', ''],
};

type CallFields = Pick<RequestRecord, 'call' | 'ttft_ms' | 'itl_mean_ms' | 'output_tokens' | 'cached_tokens' | 'computed_prompt_tokens' | 'replica' | 'queue_wait_ms' | 'preemptions'>;

const NO_CALL: CallFields = {
  call: Number.NaN, ttft_ms: Number.NaN, itl_mean_ms: Number.NaN, output_tokens: Number.NaN,
  cached_tokens: Number.NaN, computed_prompt_tokens: Number.NaN, replica: Number.NaN, queue_wait_ms: Number.NaN,
  preemptions: Number.NaN,
};

/** An arrival not yet resolved: its finished calls, and the waits not yet given to a call. */
interface Pending {
  calls: CallFields[];
  queueWait: number;
  toolWait: number;
}

/** The rows a table may still take, shared by the instances that add to it. */
interface RowBudget {
  left: number;
}

/**
 * Collects one instance's rows as the engine tells them: an arrival's are made when it
 * resolves, its call rows first, then its own (a request's one finished call and its own are
 * one row). Past the budget, an error.
 */
class InstanceRequests implements RequestRecorder {
  readonly rows: RequestRecord[] = [];
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly caseName: string,
    private readonly seed: number,
    private readonly kind: number,
    private readonly budget: RowBudget,
  ) {}

  private at(index: number): Pending {
    let p = this.pending.get(index);
    if (p === undefined) {
      p = { calls: [], queueWait: Number.NaN, toolWait: Number.NaN };
      this.pending.set(index, p);
    }
    return p;
  }

  waited(index: number, atTools: boolean, wait: number): void {
    const p = this.at(index);
    if (atTools) p.toolWait = (Number.isNaN(p.toolWait) ? 0 : p.toolWait) + wait;
    else p.queueWait = (Number.isNaN(p.queueWait) ? 0 : p.queueWait) + wait;
  }

  called(index: number, step: number, callAt: number, firstAt: number, end: number, output: number, prompt: number, cached: number, replica: number, preemptions: number): void {
    const p = this.at(index);
    p.calls.push({
      call: step,
      ttft_ms: (firstAt - callAt) / 1000,
      itl_mean_ms: output >= 2 ? (end - firstAt) / (output - 1) / 1000 : Number.NaN,
      output_tokens: output,
      cached_tokens: cached,
      computed_prompt_tokens: prompt - cached,
      replica,
      queue_wait_ms: p.queueWait / 1000,
      preemptions,
    });
    p.queueWait = Number.NaN;
  }

  resolved(index: number, arrivalAt: number, at: number, outcome: number): void {
    const p = this.pending.get(index);
    this.pending.delete(index);
    const [name, where] = OUTCOMES[outcome]!;
    const own = { case: this.caseName, seed: this.seed, arrival: index, arrival_s: arrivalAt / 1e6, outcome: name, failed_at: where };
    const calls = p?.calls ?? [];
    const adds = this.kind === KIND.TASK || calls.length !== 1 ? calls.length + 1 : 1;
    if (adds > this.budget.left) {
      throw new ServesimError('SERVESIM_GRID_TOO_LARGE', `more than ${MAX_REQUEST_ROWS.toLocaleString('en')} rows; a per-request table holds at most that many (ask for fewer --requests-seeds, or fewer cases)`, '--requests-out');
    }
    this.budget.left -= adds;
    const latency = (at - arrivalAt) / 1000;
    const queueWait = (p?.queueWait ?? Number.NaN) / 1000;
    const toolWait = (p?.toolWait ?? Number.NaN) / 1000;
    if (this.kind !== KIND.TASK && calls.length === 1) {
      // a request: its one call and itself, one row
      this.rows.push({ ...own, ...calls[0]!, latency_ms: latency, tool_wait_ms: toolWait });
      return;
    }
    for (const call of calls) this.rows.push({ ...own, ...call, latency_ms: Number.NaN, tool_wait_ms: Number.NaN });
    // a task's own row, or an arrival without a finished call (a job's wait is the server's)
    this.rows.push({ ...own, ...NO_CALL, queue_wait_ms: this.kind === KIND.TASK ? Number.NaN : queueWait, latency_ms: latency, tool_wait_ms: toolWait });
  }
}

/**
 * Runs instances `0 .. n - 1` of `config` again on the reference engine, recording them;
 * `expected` are the run's own results of those n instances, which the records must match.
 */
function recordInstances(config: EngineConfig, caseName: string, baseSeed: number, expected: readonly InstanceResult[], budget: RowBudget): RequestRecord[] {
  const recorders: InstanceRequests[] = [];
  const kind = config.params[P.KIND]!;
  runReference(config, baseSeed, 0, expected.length, 1, (instance) => {
    const recorder = new InstanceRequests(caseName, instance, kind, budget);
    recorders.push(recorder);
    return recorder;
  });
  const rows: RequestRecord[] = [];
  recorders.forEach((recorder, i) => {
    checkCounts(recorder.rows, expected[i]!, caseName, i);
    rows.push(...recorder.rows.sort((a, b) => a.arrival - b.arrival || (Number.isNaN(a.call) ? 1 : Number.isNaN(b.call) ? -1 : a.call - b.call)));
  });
  return rows;
}

/**
 * The rows of an instance hold the arrivals and successes, and the model calls, its result
 * counts: they are the run's seed, not another.
 */
function checkCounts(rows: readonly RequestRecord[], r: InstanceResult, caseName: string, seed: number): void {
  const own = rows.filter((row) => !Number.isNaN(row.latency_ms));
  const counts = [own.length, own.filter((row) => row.outcome === 'success').length, rows.filter((row) => !Number.isNaN(row.ttft_ms)).length];
  const expected = [r.arrivals, r.successes, r.callsDone];
  if (counts.join() !== expected.join()) {
    throw new Error(`the per-request records of case ${caseName}, seed ${seed} count ${counts.join('/')} arrivals/successes/calls where the run counted ${expected.join('/')}: the engines disagree`);
  }
}

/**
 * `options` that also record the first `seeds` seeds of each configuration (case of a grid
 * point), as its first look's results come, and hand the rows to `onRecords`, cases in the
 * point's order, just before the point's rows go to `options.onPoint`.
 */
export function withRequestRecords<P>(options: PointsRunOptions<P>, seeds: number, onRecords: (point: P, records: readonly RequestRecord[]) => void): PointsRunOptions<P> {
  const pending = new Map<P, RequestRecord[][]>();
  const budget: RowBudget = { left: MAX_REQUEST_ROWS };
  const { onPoint, onSeeds } = options;
  return {
    ...options,
    onSeeds: (configuration: ConfigurationSeeds<P>) => {
      onSeeds?.(configuration);
      const { point, caseIndex, caseName, first, results, config, baseSeed } = configuration;
      // the first look's seeds are 0 ..; later looks (--seeds auto) add none of the first
      if (first !== 0) return;
      const cases = pending.get(point) ?? [];
      pending.set(point, cases);
      cases[caseIndex] = recordInstances(config, caseName, baseSeed, results.slice(0, seeds), budget);
    },
    onPoint: (point, summaries) => {
      const records = (pending.get(point) ?? []).flatMap((c) => c ?? []);
      pending.delete(point);
      onRecords(point, records);
      return onPoint?.(point, summaries);
    },
  };
}
