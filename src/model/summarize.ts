/**
 * Many seeds of one case -> one output row (docs/model.md section 6).
 */
import { dollarsPerHour, gpuCount, type Goals, type Problem } from './problem.js';
import { COMPONENT_NAMES, QUEUED_COMPONENTS, type ComponentName, type InstanceResult } from './result.js';
import type { CaseSummary, ComponentColumn, PoolColumn } from './summary.js';
import { HISTOGRAM_BUCKETS, bucketMid, bucketOf, quantile } from './histogram.js';
import { clopperPearson, ratioInterval } from './stats.js';
import { intervalAlpha, sideOf, verdictOf, type Side } from './verdict.js';
import { steadyTest } from './steady.js';

/**
 * Slack for comparing rates against goals: a rate and a goal that are equal as decimals may
 * differ in the last bit once computed (99.9 / 100 vs 0.999).
 */
const RATE_EPSILON = 1e-12;
const U32_MAX = 0xffffffff;

/**
 * Aggregates the per-seed results of one case into a {@link CaseSummary}.
 *
 * `looks` is how many times the run looks at this configuration's verdict (`--seeds auto`, 1
 * for a fixed seed count): the intervals the verdict weighs (success's, the pass probability's,
 * and each latency goal's share over it) are taken at 1 - 2 x 0.05 / (looks x goals)
 * (`interval_level`, src/model/verdict.ts); the p99 spreads are the seeds' 2.5-97.5%.
 *
 * - `success` is pooled (Σ successes / Σ arrivals), with the ratio estimator's Student-t
 *   interval across seeds (`ratioInterval`); seeds with no arrivals carry no rate and are left
 *   out. With fewer than two such seeds there is no spread to measure: lo = hi = success.
 * - Quantiles (p50, p90, p95, p99) come from the pooled histogram (the sum of the seeds'), in
 *   milliseconds, each within its bucket's 0.8%; NaN when there are no successes.
 * - Means pool the same values exactly: the seeds' sums over their counts (Σ latencySum /
 *   Σ successes, Σ ttftSum / Σ callsDone, Σ tpotSum / Σ tpotCalls), so a mean and the quantiles
 *   beside it describe one pooled set of values; NaN when it is empty. Each call's TPOT is
 *   floored to a microsecond by the engines before it is summed. The mean inter-token latency
 *   weighs tokens rather than calls, as vLLM's does: Σ itlSum / Σ (outputTokens - callsDone),
 *   every gap between two tokens of a call alike ({@link meanItlMicros}).
 * - `p99_lo_ms`/`p99_hi_ms` are the nearest-rank 2.5% and 97.5% quantiles of the per-seed p99s
 *   (the same convention as the histogram's `quantile()`); seeds without successes are skipped.
 * - `p99_all_ms` counts every failure (arrivals - successes) at `timeoutMicros`. A
 *   `timeoutMicros` of 0 (or less) means the case has no deadline: failures then count as
 *   infinitely slow, and `p99_all_ms` is Infinity when they reach the top 1%.
 * - TTFT and TPOT means, quantiles and per-seed p99 spread are computed as latency's, from their
 *   own sums and histograms (NaN for a design without model calls).
 * - `pass_probability` is the share of all seeds (including those without arrivals, which do
 *   not pass) whose own success rate and own p99 (and TTFT and TPOT p99 where those goals are
 *   set) meet the goals; a seed without successes has no p99 and does not pass. Its interval is
 *   Clopper-Pearson's. Quantiles are compared in microseconds (the bucket midpoint) against the
 *   goals.
 * - `verdict` weighs the pass probability's interval against `confidence`, pooled success's
 *   against its goal, and each pooled latency goal as the share of values over the goal with
 *   its interval across seeds: PASS when every one lies on its goal's side, FAIL when one lies
 *   wholly on the wrong side (or a seed overloaded), else UNDECIDED, naming in `undecided` the
 *   goals still within noise. `passes` is verdict PASS.
 * - Rates per second divide by every seed's measured window (`throughput_per_s`: Σ successes /
 *   Σ measured seconds). Per component: utilisation is
 *   pooled busy time over pooled capacity; waits pool the queue's calls over seeds.
 * - `kv_in_use` pools too: the seeds' KV in use, integrated over the measured window and summed
 *   over replicas, over their replicas x windows; `kv_in_use_peak` is the mean of the seeds'
 *   own peaks (the largest of them would only grow with the seeds).
 * - `preemptions_per_call` and `recomputed_tokens_per_call` pool the counted calls'
 *   preemptions and the tokens their resumptions recomputed over the calls done (0 without
 *   calls); NaN unless the configuration takes KV incrementally (gpu.kv incremental), as
 *   `kv_hit_rate_offload` is NaN without an offload tier.
 * - Under gpu.disaggregation, each pool's `_utilization` and `_batch_occupancy` are
 *   gpu_utilization's and batch_occupancy's over its own replicas: the prefill pool's busy time
 *   and batch area are the totals less the decode pool's, its capacity the GPU's pooled
 *   capacity x prefill / replicas (the decode pool's alike); `transfer_ms` and
 *   `transfer_wait_ms` pool the transfers' link time and their wait in the decode replica's
 *   queue (for a slot and KV room) over the transfers (0 without transfers). All six are NaN
 *   when co-located, as `kv_hit_rate_offload` is without a tier.
 * - A seed whose instance was overloaded (reached one of the engines' capacities) does not
 *   pass, and a case with any such seed fails: `overload_reason` says where and in how many
 *   seeds. Its unserved requests are failures already (`overloaded`), so success and p99 stay
 *   what the seeds measured.
 * - `steady` tests the measured window for steady state on its intervals, each one's resolved
 *   arrivals and their sojourns summed over seeds (model/steady.ts, docs/model.md section 1);
 *   `suggested_warmup_s` is the warm-up that test suggests.
 */
export function summarize(
  caseName: string,
  goals: Goals,
  confidence: number,
  results: readonly InstanceResult[],
  timeoutMicros: number,
  configuration: ConfigurationCost = NO_COST,
  looks = 1,
): CaseSummary {
  const seeds = new CaseSeeds(goals);
  for (const r of results) seeds.add(r);
  return seeds.summary(caseName, confidence, timeoutMicros, configuration, looks);
}

/**
 * A case's seeds as they come, kept as what {@link summarize} needs: sums, pooled histograms and
 * a few numbers a seed, never the seeds' records, so a configuration that takes thousands of
 * seeds (`--seeds auto`) holds kilobytes.
 */
export class CaseSeeds {
  private seeds = 0;
  private pooled: Float64Array = new Float64Array(HISTOGRAM_BUCKETS);
  private arrivals = 0;
  private successes = 0;
  private rejected = 0;
  private timedOut = 0;
  private died = 0;
  private overloaded = 0;
  private readonly overloads = new Map<string, number>();
  private promptTokens = 0;
  private cachedTokens = 0;
  private offloadTokens = 0;
  private preemptions = 0;
  private recomputedTokens = 0;
  private transfers = 0;
  private transferWaitSum = 0;
  private transferSum = 0;
  private decodeBusy = 0;
  private decodeBatchArea = 0;
  private callsDone = 0;
  private busy = 0;
  private batchArea = 0;
  private kvInUseArea = 0;
  private kvInUsePeaks = 0;
  private good = 0;
  private latencySum = 0;
  private outputTokens = 0;
  private itlSum = 0;
  private itlGaps = 0;
  private measuredMicros = 0;
  private longestQueue = 0;
  private longestQueueAt = '';
  private readonly ttft = new Pooled();
  private readonly tpot = new Pooled();
  // each seed's busiest replica: placement is drawn per seed, so replica indexes differ between seeds
  private topCalls = 0;
  private totalCalls = 0;
  private gpuReplicas = 0;
  private routedReplicas = 0;
  private hasCalls = false;
  private readonly seedP99s: number[] = [];
  private seedsPassing = 0;
  // per seed, for the pooled goals' intervals: successes over arrivals, and each latency
  // goal's share of values over it
  private readonly seedArrivals: number[] = [];
  private readonly seedSuccesses: number[] = [];
  private readonly latencyOver: OverGoal;
  private readonly ttftOver: OverGoal;
  private readonly tpotOver: OverGoal;
  private readonly loads = new Map<ComponentName, { busy: number; capacity: number; rejected: number; timedOut: number }>();
  // the measured window's intervals, pooled over seeds, for the steady-state test (steady.ts)
  private warmupMicros = 0;
  private intervalMicros = 0;
  private judgedIntervals = 0;
  private intervalResolved = new Float64Array(0);
  private intervalSojourn = new Float64Array(0);
  private readonly queues = new Map<ComponentName, { waits: Pooled; reached: number; waited: number }>();

  constructor(private readonly goals: Goals) {
    this.latencyOver = new OverGoal(goals.p99);
    this.ttftOver = new OverGoal(goals.ttftP99);
    this.tpotOver = new OverGoal(goals.tpotP99);
  }

  add(r: InstanceResult): void {
    this.seeds++;
    this.arrivals += r.arrivals;
    this.successes += r.successes;
    this.rejected += r.rejected;
    this.timedOut += r.timedOut;
    this.died += r.died;
    this.overloaded += r.overloaded;
    if (r.overload !== '') this.overloads.set(r.overload, (this.overloads.get(r.overload) ?? 0) + 1);
    this.promptTokens += r.promptTokens;
    this.cachedTokens += r.cachedTokens;
    this.offloadTokens += r.offloadTokens;
    this.preemptions += r.preemptions;
    this.recomputedTokens += r.recomputedTokens;
    this.transfers += r.transfers;
    this.transferWaitSum += r.transferWaitSum;
    this.transferSum += r.transferSum;
    this.decodeBusy += r.decodeBusyMicros;
    this.decodeBatchArea += r.decodeBatchArea;
    this.callsDone += r.callsDone;
    this.busy += r.busyMicros;
    this.batchArea += r.batchArea;
    this.kvInUseArea += r.kvInUseArea;
    this.kvInUsePeaks += r.kvInUsePeak;
    this.good += r.good;
    this.latencySum += r.latencySum;
    this.outputTokens += r.outputTokens;
    this.itlSum += r.itlSum;
    this.itlGaps += tokenGaps(r);
    this.measuredMicros += r.measuredMicros;
    if (r.longestQueue > this.longestQueue) {
      this.longestQueue = r.longestQueue;
      this.longestQueueAt = r.longestQueueAt;
    }
    const seedTtft = this.ttft.add(r.ttft, r.ttftSum, r.callsDone);
    const seedTpot = this.tpot.add(r.tpot, r.tpotSum, r.tpotCalls);
    if (this.pooled.length < r.latency.length) this.pooled = grown(this.pooled, r.latency.length);
    for (let i = 0; i < r.latency.length; i++) this.pooled[i]! += r.latency[i]!;
    // the router's placement: under gpu.disaggregation, of the prefill pool (the decode pool's
    // router places the same calls again)
    let top = 0;
    for (let k = 0; k < r.routedReplicas; k++) {
      const c = r.callsPerReplica[k]!;
      this.totalCalls += c;
      top = Math.max(top, c);
    }
    this.topCalls += top;
    if (this.seeds === 1) {
      this.gpuReplicas = r.callsPerReplica.length;
      this.routedReplicas = r.routedReplicas;
      this.warmupMicros = r.warmupMicros;
      this.intervalMicros = r.intervalMicros;
      this.judgedIntervals = r.judgedIntervals;
      this.intervalResolved = new Float64Array(r.intervalResolved.length);
      this.intervalSojourn = new Float64Array(r.intervalSojourn.length);
    }
    for (let k = 0; k < r.intervalResolved.length; k++) {
      this.intervalResolved[k]! += r.intervalResolved[k]!;
      this.intervalSojourn[k]! += r.intervalSojourn[k]!;
    }
    this.hasCalls ||= r.components.gpu !== undefined;
    this.addComponents(r);

    this.seedArrivals.push(r.arrivals);
    this.seedSuccesses.push(r.successes);
    this.latencyOver.add(r.latency);
    this.ttftOver.add(r.ttft);
    this.tpotOver.add(r.tpot);
    const p99 = quantile(r.latency, 0.99);
    if (!Number.isNaN(p99)) this.seedP99s.push(p99);
    if (seedGoals(r, p99, seedTtft, seedTpot, this.goals).passes) this.seedsPassing++;
  }

  private addComponents(r: InstanceResult): void {
    for (const c of COMPONENT_NAMES) {
      const load = r.components[c];
      if (load === undefined) continue;
      const sum = this.loads.get(c) ?? { busy: 0, capacity: 0, rejected: 0, timedOut: 0 };
      sum.busy += load.busyMicros;
      sum.capacity += load.capacityMicros;
      sum.rejected += load.rejected;
      sum.timedOut += load.timedOut;
      this.loads.set(c, sum);
      const q = load.queue;
      if (q === null) continue;
      const queue = this.queues.get(c) ?? { waits: new Pooled(), reached: 0, waited: 0 };
      queue.waits.add(q.waits, q.waitSum, q.reached);
      queue.reached += q.reached;
      queue.waited += q.waited;
      this.queues.set(c, queue);
    }
  }

  /** The row of the seeds so far; `looks` as {@link summarize} takes it. */
  summary(caseName: string, confidence: number, timeoutMicros: number, configuration: ConfigurationCost = NO_COST, looks = 1): CaseSummary {
    const { goals, seeds, arrivals, successes } = this;
    const latency = { p99: this.latencyOver, ttft_p99: this.ttftOver, tpot_p99: this.tpotOver };
    // the goals the verdict weighs: the pass probability, success, and each latency goal set
    const weighed = 2 + Object.values(latency).filter((over) => over.isSet).length;
    const alpha = intervalAlpha(looks, weighed);
    const hasDeadline = timeoutMicros > 0;
    const timeoutBucket = hasDeadline ? bucketOf(Math.min(Math.round(timeoutMicros), U32_MAX)) : 0;
    const pooled = grown(this.pooled, Math.max(this.pooled.length, timeoutBucket + 1));

    const success = arrivals > 0 ? successes / arrivals : Number.NaN;
    const successInterval = ratioInterval(this.seedSuccesses, this.seedArrivals, alpha);

    const p50 = quantile(pooled, 0.5);
    const p90 = quantile(pooled, 0.9);
    const p95 = quantile(pooled, 0.95);
    const p99 = quantile(pooled, 0.99);

    const seedP99s = [...this.seedP99s].sort((a, b) => a - b);
    const p99Lo = nearestRank(seedP99s, 0.025);
    const p99Hi = nearestRank(seedP99s, 0.975);

    const failures = Math.max(0, arrivals - successes);
    let p99All: number;
    if (hasDeadline) {
      pooled[timeoutBucket]! += failures;
      p99All = quantile(pooled, 0.99);
    } else {
      // failures sit above every success: the rank falls among the successes or among them
      const total = successes + failures;
      const rank = Math.max(1, Math.ceil(0.99 * total));
      p99All = total === 0 ? Number.NaN : rank <= successes ? quantileAtRank(pooled, rank) : Infinity;
    }

    const { ttft, tpot, overloads, hasCalls, gpuReplicas } = this;
    const passProbability = seeds > 0 ? this.seedsPassing / seeds : Number.NaN;
    let overloadedSeeds = 0;
    for (const k of overloads.values()) overloadedSeeds += k;
    const ttftP99 = ttft.quantile(0.99);
    const tpotP99 = tpot.quantile(0.99);
    const [passLo, passHi] = clopperPearson(this.seedsPassing, seeds, alpha);
    const sides: Record<Criterion, Side | null> = {
      pass_probability: seeds === 0 ? 'misses' : sideOf(passLo, passHi, confidence, 'atLeast', RATE_EPSILON),
      success: ratioSide(successInterval, success >= goals.success - RATE_EPSILON, goals.success, 'atLeast'),
      p99: latency.p99.side(p99 <= goals.p99, alpha),
      ttft_p99: latency.ttft_p99.side(ttftP99 <= (goals.ttftP99 ?? Infinity), alpha),
      tpot_p99: latency.tpot_p99.side(tpotP99 <= (goals.tpotP99 ?? Infinity), alpha),
    };
    const criteria = (Object.keys(sides) as Criterion[]).filter((c) => sides[c] !== null);
    const verdict = verdictOf(criteria.map((c) => sides[c]!), overloadedSeeds > 0);
    const undecided = verdict === 'UNDECIDED' ? criteria.filter((c) => sides[c] === 'straddles') : [];
    const missed = criteria.filter((c) => sides[c] === 'misses');
    const { measuredMicros, outputTokens, batchArea, busy, good, cachedTokens, promptTokens } = this;
    const { rejected, timedOut, died, overloaded, topCalls, totalCalls, longestQueue, longestQueueAt } = this;
    const perSecond = (n: number): number => (measuredMicros > 0 ? (n * 1e6) / measuredMicros : Number.NaN);

    return {
      case: caseName,
      seeds,
      requests: arrivals,
      success,
      success_lo: successInterval.lo,
      success_hi: successInterval.hi,
      mean_ms: successes > 0 ? this.latencySum / successes / 1000 : Number.NaN,
      p50_ms: p50 / 1000,
      p90_ms: p90 / 1000,
      p95_ms: p95 / 1000,
      p99_ms: p99 / 1000,
      p99_lo_ms: p99Lo / 1000,
      p99_hi_ms: p99Hi / 1000,
      p99_all_ms: p99All / 1000,
      ttft_mean_ms: ttft.mean() / 1000,
      ttft_p50_ms: ttft.quantile(0.5) / 1000,
      ttft_p90_ms: ttft.quantile(0.9) / 1000,
      ttft_p95_ms: ttft.quantile(0.95) / 1000,
      ttft_p99_ms: ttftP99 / 1000,
      ttft_p99_lo_ms: ttft.seedP99(0.025) / 1000,
      ttft_p99_hi_ms: ttft.seedP99(0.975) / 1000,
      tpot_mean_ms: tpot.mean() / 1000,
      tpot_p50_ms: tpot.quantile(0.5) / 1000,
      tpot_p90_ms: tpot.quantile(0.9) / 1000,
      tpot_p95_ms: tpot.quantile(0.95) / 1000,
      tpot_p99_ms: tpotP99 / 1000,
      tpot_p99_lo_ms: tpot.seedP99(0.025) / 1000,
      tpot_p99_hi_ms: tpot.seedP99(0.975) / 1000,
      itl_mean_ms: (this.itlGaps > 0 ? this.itlSum / this.itlGaps : Number.NaN) / 1000,
      pass_probability: passProbability,
      pass_probability_lo: passLo,
      pass_probability_hi: passHi,
      interval_level: 1 - alpha,
      verdict,
      undecided: undecided.join(','),
      missed: missed.join(','),
      passes: verdict === 'PASS',
      throughput_per_s: perSecond(successes),
      output_tokens_per_s: hasCalls ? perSecond(outputTokens) : Number.NaN,
      output_tokens_per_s_per_replica: hasCalls ? perSecond(outputTokens) / gpuReplicas : Number.NaN,
      goodput_per_s: perSecond(good),
      kv_hit_rate: ratio(cachedTokens, promptTokens),
      kv_hit_rate_gpu: ratio(cachedTokens - this.offloadTokens, promptTokens),
      kv_hit_rate_offload: configuration.offload === true ? ratio(this.offloadTokens, promptTokens) : Number.NaN,
      mean_batch: ratio(batchArea, busy),
      // each pool's batches over its own slots (a split pool's decode replicas may have their own)
      batch_occupancy: hasCalls ? ratio(batchArea - this.decodeBatchArea, busy) / configuration.gpuSlots + ratio(this.decodeBatchArea, busy) / (configuration.decodeSlots ?? configuration.gpuSlots) : Number.NaN,
      kv_in_use: hasCalls ? ratio(this.kvInUseArea, this.loads.get('gpu')?.capacity ?? 0) : Number.NaN,
      kv_in_use_peak: hasCalls ? this.kvInUsePeaks / seeds : Number.NaN,
      // only where sequences can be preempted: under reserve there is nothing to count
      preemptions_per_call: configuration.kvIncremental === true ? ratio(this.preemptions, this.callsDone) : Number.NaN,
      recomputed_tokens_per_call: configuration.kvIncremental === true ? ratio(this.recomputedTokens, this.callsDone) : Number.NaN,
      ...this.poolColumns(configuration),
      rejected,
      timed_out: timedOut,
      died,
      overloaded,
      top_replica_share: ratio(topCalls, totalCalls),
      longest_queue: longestQueue,
      longest_queue_at: longestQueueAt,
      gpus: configuration.gpus,
      gpu_replicas: gpuReplicas > 0 ? gpuReplicas : Number.NaN,
      routed_replicas: this.routedReplicas > 0 ? this.routedReplicas : Number.NaN,
      dollars_per_hour: configuration.dollarsPerHour,
      ...this.steadyColumns(),
      ...this.componentColumns(),
      overloaded_seeds: overloadedSeeds,
      overload_reason: overloadReason(overloads, seeds),
    };
  }

  /**
   * Each pool's load under gpu.disaggregation, as gpu_utilization and batch_occupancy are the
   * whole GPU's: the GPU's pooled capacity (replicas x window) split by the pools' replicas;
   * the transfers' link time and queue wait over the transfers. NaN when co-located.
   */
  private poolColumns(configuration: ConfigurationCost): Pick<CaseSummary, PoolColumn> {
    const prefill = configuration.prefillReplicas ?? 0;
    const decode = configuration.decodeReplicas ?? 0;
    if (!(prefill > 0 && decode > 0)) {
      return {
        prefill_utilization: Number.NaN, decode_utilization: Number.NaN,
        prefill_batch_occupancy: Number.NaN, decode_batch_occupancy: Number.NaN,
        transfer_ms: Number.NaN, transfer_wait_ms: Number.NaN,
      };
    }
    const capacity = this.loads.get('gpu')?.capacity ?? 0;
    const prefillBusy = this.busy - this.decodeBusy;
    return {
      prefill_utilization: ratio(prefillBusy, (capacity * prefill) / (prefill + decode)),
      decode_utilization: ratio(this.decodeBusy, (capacity * decode) / (prefill + decode)),
      prefill_batch_occupancy: ratio(this.batchArea - this.decodeBatchArea, prefillBusy) / configuration.gpuSlots,
      decode_batch_occupancy: ratio(this.decodeBatchArea, this.decodeBusy) / (configuration.decodeSlots ?? configuration.gpuSlots),
      transfer_ms: ratio(this.transferSum, this.transfers) / 1000,
      transfer_wait_ms: ratio(this.transferWaitSum, this.transfers) / 1000,
    };
  }

  /** The warm-up, and whether the window is in steady state by its pooled intervals (steady.ts). */
  private steadyColumns(): Pick<CaseSummary, 'warmup_s' | 'steady' | 'suggested_warmup_s'> {
    const test = steadyTest(this.intervalResolved, this.intervalSojourn, this.judgedIntervals);
    const suggested = test.steady ? this.warmupMicros : Math.ceil((this.warmupMicros + test.truncated * this.intervalMicros) / 1e6) * 1e6;
    return { warmup_s: this.warmupMicros / 1e6, steady: test.steady, suggested_warmup_s: suggested / 1e6 };
  }

  /** The per-component columns; NaN for a component the design lacks. */
  private componentColumns(): Record<ComponentColumn, number> {
    const out = {} as Record<ComponentColumn, number>;
    for (const c of COMPONENT_NAMES) {
      const load = this.loads.get(c);
      out[`${c}_utilization`] = load === undefined ? Number.NaN : ratio(load.busy, load.capacity);
      out[`${c}_rejected`] = load?.rejected ?? Number.NaN;
      out[`${c}_timed_out`] = load?.timedOut ?? Number.NaN;
    }
    for (const c of QUEUED_COMPONENTS) {
      const queue = this.queues.get(c);
      // 0 rather than NaN when no call reached the queue, as the ratios
      out[`${c}_wait_mean_ms`] = queue === undefined ? Number.NaN : queue.reached > 0 ? queue.waits.mean() / 1000 : 0;
      out[`${c}_wait_p99_ms`] = queue === undefined ? Number.NaN : queue.waits.quantile(0.99) / 1000;
      out[`${c}_wait_probability`] = queue === undefined ? Number.NaN : ratio(queue.waited, queue.reached);
    }
    return out;
  }
}

/** `counts` copied into an array of `length` (at least its own). */
function grown(counts: Float64Array, length: number): Float64Array {
  const out = new Float64Array(Math.max(length, counts.length));
  out.set(counts);
  return out;
}

/**
 * What the configuration's GPUs are, cost an hour, how many sequences a replica batches (NaN
 * where unknown), whether its replicas have a KV offload tier (absent: none), whether they
 * take KV incrementally and may preempt (gpu.kv incremental; absent: reserve), and under
 * gpu.disaggregation how many replicas only prefill and how many only decode (absent or 0:
 * co-located, each replica does both).
 */
export interface ConfigurationCost {
  readonly gpus: number;
  readonly dollarsPerHour: number;
  readonly gpuSlots: number;
  readonly offload?: boolean;
  readonly kvIncremental?: boolean;
  readonly prefillReplicas?: number;
  readonly decodeReplicas?: number;
  /** The decode replicas' slots, where they have their own (gpu.disaggregation.decode). */
  readonly decodeSlots?: number;
}

const NO_COST: ConfigurationCost = { gpus: Number.NaN, dollarsPerHour: Number.NaN, gpuSlots: Number.NaN };

/** A problem's GPUs, their price and batch size, whether they have an offload tier and take KV incrementally, and its pools, for its rows. */
export function configurationCost(problem: Problem): ConfigurationCost {
  const prefill = problem.gpu?.disaggregation?.prefill ?? 0;
  return {
    gpus: gpuCount(problem) ?? Number.NaN,
    dollarsPerHour: dollarsPerHour(problem) ?? Number.NaN,
    gpuSlots: problem.gpu?.slots ?? Number.NaN,
    offload: problem.gpu?.offload !== undefined,
    kvIncremental: problem.gpu?.kv === 'incremental',
    prefillReplicas: prefill,
    decodeReplicas: prefill > 0 ? (problem.gpu?.replicas ?? prefill) - prefill : 0,
    ...(problem.gpu?.disaggregation === undefined ? {} : { decodeSlots: problem.gpu.disaggregation.decode.slots }),
  };
}

/** "overloaded: queue at server passed its capacity (272 jobs) in 64 of 64 seeds", most seeds first. */
function overloadReason(overloads: ReadonlyMap<string, number>, seeds: number): string {
  if (overloads.size === 0) return '';
  const parts = [...overloads].sort((a, b) => b[1] - a[1]).map(([where, k]) => `${where} in ${k} of ${seeds} seeds`);
  return `overloaded: ${parts.join('; ')}`;
}

/** The goals one seed meets on its own (null: a goal the problem does not set), and whether it passes. */
export interface SeedGoals {
  readonly success: boolean;
  readonly p99: boolean;
  readonly ttftP99: boolean | null;
  readonly tpotP99: boolean | null;
  /** Arrivals, no capacity of the engines reached, and every goal set met: a seed `pass_probability` counts. */
  readonly passes: boolean;
}

/**
 * Which goals a seed meets, from its own success rate and its own p99s (microseconds, the
 * bucket midpoint as `quantile()` gives it; NaN where it counted none). NaN (no arrivals, no
 * successes) never meets a goal; a goal not set asks nothing.
 */
export function seedGoals(r: InstanceResult, p99Micros: number, ttftP99: number, tpotP99: number, goals: Goals): SeedGoals {
  const met = {
    success: r.successes / r.arrivals >= goals.success - RATE_EPSILON,
    p99: p99Micros <= goals.p99,
    ttftP99: goals.ttftP99 === null ? null : ttftP99 <= goals.ttftP99,
    tpotP99: goals.tpotP99 === null ? null : tpotP99 <= goals.tpotP99,
  };
  return { ...met, passes: r.arrivals > 0 && r.overload === '' && met.success && met.p99 && met.ttftP99 !== false && met.tpotP99 !== false };
}

/** What a case's verdict weighs: the pass probability and each pooled goal set. */
type Criterion = 'pass_probability' | 'success' | 'p99' | 'ttft_p99' | 'tpot_p99';

/**
 * A pooled ratio's side of its goal. Its interval decides, but never against the point
 * estimate (an interval clamped or rounded at the edge), and with fewer than two seeds there
 * is no spread to decide on: it straddles unless nothing was measured at all (a miss).
 */
function ratioSide(
  interval: { readonly ratio: number; readonly lo: number; readonly hi: number; readonly seeds: number },
  pointMeets: boolean,
  goal: number,
  direction: 'atLeast' | 'atMost',
): Side {
  if (Number.isNaN(interval.ratio)) return 'misses';
  if (interval.seeds < 2) return 'straddles';
  const side = sideOf(interval.lo, interval.hi, goal, direction, RATE_EPSILON);
  if ((side === 'meets' && !pointMeets) || (side === 'misses' && pointMeets)) return 'straddles';
  return side;
}

/**
 * A latency goal "p99 <= goal" as a share: the pooled p99 meets it when at most 1% of the
 * pooled values lie over it (buckets whose midpoint is over the goal, as `quantile()`
 * compares), so the goal's interval is that of the share of values over it across seeds.
 */
class OverGoal {
  private readonly over: number[] = [];
  private readonly counted: number[] = [];
  /** The first bucket whose midpoint is over the goal (midpoints rise with the bucket). */
  private readonly firstOver: number;

  constructor(private readonly goal: number | null) {
    // the goal's own bucket is over it when its midpoint is; every bucket below lies under it
    const at = goal === null ? 0 : bucketOf(Math.min(Math.floor(goal), U32_MAX));
    this.firstOver = goal !== null && bucketMid(at) <= goal ? at + 1 : at;
  }

  /** Whether the problem sets this goal (the verdict weighs it). */
  get isSet(): boolean {
    return this.goal !== null;
  }

  add(histogram: ArrayLike<number>): void {
    if (this.goal === null) return;
    let over = 0;
    let total = 0;
    for (let i = 0; i < histogram.length; i++) {
      total += histogram[i]!;
      if (i >= this.firstOver) over += histogram[i]!;
    }
    this.over.push(over);
    this.counted.push(total);
  }

  /** The goal's side, or null when the goal is not set. */
  side(pointMeets: boolean, alpha: number): Side | null {
    if (this.goal === null) return null;
    return ratioSide(ratioInterval(this.over, this.counted, alpha), pointMeets, TAIL_SHARE, 'atMost');
  }
}

/** p99: the share of values a 99th percentile leaves above it. */
const TAIL_SHARE = 0.01;

/**
 * A per-call time (TTFT, TPOT, a queue's wait) pooled over seeds: the sum of their histograms,
 * of their values and of their counts, and each seed's p99.
 */
class Pooled {
  private counts: Float64Array = new Float64Array(0);
  private sum = 0;
  private counted = 0;
  private readonly seedP99s: number[] = [];
  private sorted = true;

  /** Adds a seed's histogram, and the sum and count of its values; returns the seed's own p99 (NaN if it counted nothing). */
  add(histogram: Uint32Array, sum: number, counted: number): number {
    this.sum += sum;
    this.counted += counted;
    if (this.counts.length < histogram.length) this.counts = grown(this.counts, histogram.length);
    for (let i = 0; i < histogram.length; i++) this.counts[i]! += histogram[i]!;
    const p99 = histogram.length === 0 ? Number.NaN : quantile(histogram, 0.99);
    if (!Number.isNaN(p99)) {
      this.seedP99s.push(p99);
      this.sorted = false;
    }
    return p99;
  }

  /** Mean of the pooled values, microseconds; NaN when none were counted. */
  mean(): number {
    return this.counted > 0 ? this.sum / this.counted : Number.NaN;
  }

  /** Quantile of the pooled histogram, microseconds; NaN when it is empty. */
  quantile(q: number): number {
    return this.counts.length === 0 ? Number.NaN : quantile(this.counts, q);
  }

  /** Nearest-rank quantile of the per-seed p99s, microseconds. */
  seedP99(q: number): number {
    if (!this.sorted) {
      this.seedP99s.sort((a, b) => a - b);
      this.sorted = true;
    }
    return nearestRank(this.seedP99s, q);
  }
}

/**
 * The gaps between two output tokens of a seed's finished calls: Σ (output tokens - 1) over the
 * calls with two or more, whose (end - first token) itlSum sums. Every call has at least one
 * token (the engines draw max(1, ...), a trace's lengths are at least 1), so a call of one
 * adds nothing to either and the difference counts exactly those calls' gaps.
 */
function tokenGaps(r: InstanceResult): number {
  return r.outputTokens - r.callsDone;
}

/** A seed's mean inter-token latency, microseconds, token-weighted as vLLM's; NaN without gaps. */
export function meanItlMicros(r: InstanceResult): number {
  const gaps = tokenGaps(r);
  return gaps > 0 ? r.itlSum / gaps : Number.NaN;
}

/** 0 rather than NaN: these are "none of it" when nothing happened (no tokens, no calls). */
function ratio(num: number, den: number): number {
  return den > 0 ? num / den : 0;
}

/** The smallest value whose rank reaches ceil(q x n), as `quantile()` does on a histogram. */
function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** The histogram value at an absolute rank (1-based), reported at its bucket's midpoint. */
function quantileAtRank(counts: ArrayLike<number>, rank: number): number {
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= rank) return bucketMid(i);
  }
  return Number.NaN;
}
