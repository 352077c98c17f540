import { describe, expect, it } from 'vitest';
import { HISTOGRAM_BUCKETS, bucketMid, bucketOf } from '../src/model/histogram.js';
import type { Goals } from '../src/model/problem.js';
import type { ComponentLoad, InstanceResult } from '../src/model/result.js';
import { clopperPearson, studentT } from '../src/model/stats.js';
import { intervalAlpha } from '../src/model/verdict.js';

/** A fixed seed count, three goals (pass probability, success, p99): each interval at 1 - 0.1 / 3. */
const ALPHA = intervalAlpha(1, 3);
import { configurationCost, summarize } from '../src/model/summarize.js';
import { loadProblem } from '../src/problem/parse.js';

/** A seed's result: `latencies` are the successes' latencies in microseconds. */
function seed(
  fields: Partial<Omit<InstanceResult, 'latency' | 'callsPerReplica'>> & {
    latencies?: readonly number[];
    calls?: readonly number[];
  } = {},
): InstanceResult {
  const latencies = fields.latencies ?? [];
  const latency = new Uint32Array(HISTOGRAM_BUCKETS);
  for (const v of latencies) latency[bucketOf(v)]!++;
  const { latencies: _l, calls, ...rest } = fields;
  const successes = rest.successes ?? latencies.length;
  return {
    arrivals: successes,
    rejected: 0,
    timedOut: 0,
    died: 0,
    overloaded: 0,
    overload: '',
    latencySum: latencies.reduce((a, b) => a + b, 0),
    sojournSum: 0,
    good: 0,
    callsDone: 0,
    ttft: new Uint32Array(0),
    ttftSum: 0,
    tpotCalls: 0,
    tpot: new Uint32Array(0),
    tpotSum: 0,
    itlSum: 0,
    outputTokens: 0,
    promptTokens: 0,
    cachedTokens: 0,
    offloadTokens: 0,
    preemptions: 0,
    recomputedTokens: 0,
    transfers: 0,
    transferWaitSum: 0,
    transferSum: 0,
    busyMicros: 0,
    batchArea: 0,
    decodeBusyMicros: 0,
    decodeBatchArea: 0,
    kvInUseArea: 0,
    kvInUsePeak: 0,
    capacityMicros: 0,
    inSystemArea: 0,
    measuredMicros: 0,
    longestQueue: 0,
    longestQueueAt: '',
    components: {},
    events: 0,
    warmupMicros: 0,
    intervalMicros: 0,
    intervalResolved: new Uint32Array(0),
    intervalSojourn: new Float64Array(0),
    judgedIntervals: 0,
    ...rest,
    successes,
    latency,
    callsPerReplica: Uint32Array.from(calls ?? []),
    routedReplicas: rest.routedReplicas ?? (calls ?? []).length,
  };
}

const repeat = (value: number, n: number): number[] => Array.from({ length: n }, () => value);
const GOALS: Goals = { success: 0.9, p99: 60, ttftP99: null, tpotP99: null };

/** A histogram of these microsecond values. */
function histogram(values: readonly number[]): Uint32Array {
  const h = new Uint32Array(HISTOGRAM_BUCKETS);
  for (const v of values) h[bucketOf(v)]!++;
  return h;
}

/** A GPU pool's load with a queue whose calls waited these microseconds. */
function gpuLoad(busyMicros: number, waits: readonly number[], rejected = 0, timedOut = 0): ComponentLoad {
  return {
    busyMicros,
    capacityMicros: 1000,
    queue: {
      reached: waits.length,
      waited: waits.filter((w) => w > 0).length,
      waitSum: waits.reduce((a, b) => a + b, 0),
      waits: histogram(waits),
    },
    rejected,
    timedOut,
  };
}
const TIMEOUT = 50;

describe('summarize', () => {
  it('pools success over seeds', () => {
    const s = summarize(
      'as-given',
      GOALS,
      0.9,
      [seed({ arrivals: 100, latencies: repeat(10, 90) }), seed({ arrivals: 300, latencies: repeat(10, 297) })],
      TIMEOUT,
    );
    expect(s.case).toBe('as-given');
    expect(s.seeds).toBe(2);
    expect(s.requests).toBe(400);
    expect(s.success).toBeCloseTo(387 / 400, 12);
  });

  it('takes pooled quantiles of a known histogram, in ms', () => {
    // exact buckets below 64 us: 50 x 10 us, 40 x 20 us, 10 x 60 us
    const latencies = [...repeat(10, 50), ...repeat(20, 40), ...repeat(60, 10)];
    const s = summarize('c', GOALS, 0.9, [seed({ latencies: latencies.slice(0, 60) }), seed({ latencies: latencies.slice(60) })], TIMEOUT);
    expect(s.p50_ms).toBe(0.01);
    expect(s.p90_ms).toBe(0.02);
    expect(s.p99_ms).toBe(0.06);
  });

  it('takes the mean exactly from the pooled sums, and p95 from the pooled histogram', () => {
    // seed 1: 90 x 10 us, 9 x 20 us; seed 2: 1 x 63 us. The mean is the 100 values' mean, not
    // the mean of the seeds' means (10.9 and 63 us); the 95th of 100 values is a 20 us one
    const s = summarize('c', GOALS, 0.9, [seed({ latencies: [...repeat(10, 90), ...repeat(20, 9)] }), seed({ latencies: [63] })], TIMEOUT);
    expect(s.mean_ms).toBe((900 + 180 + 63) / 100 / 1000);
    expect(s.p95_ms).toBe(0.02);
    // a value above 64 us is bucketed, the mean is not
    const large = summarize('c', GOALS, 0.9, [seed({ latencies: [1_000_001, 1_000_003] })], TIMEOUT);
    expect(large.mean_ms).toBe(1000.002);
    expect(large.p50_ms).not.toBe(1000.002);
    expect(summarize('c', GOALS, 0.9, [seed({ arrivals: 3, timedOut: 3 })], TIMEOUT).mean_ms).toBeNaN();
  });

  it('reports a large latency within the 0.8% bucket error', () => {
    const s = summarize('c', GOALS, 0.9, [seed({ latencies: repeat(2_000_000, 10) })], 30e6);
    expect(s.p99_ms).toBeCloseTo(bucketMid(bucketOf(2_000_000)) / 1000, 9);
    expect(Math.abs(s.p99_ms - 2000) / 2000).toBeLessThan(0.008);
  });

  it('counts failures at the timeout for p99_all', () => {
    const results = [seed({ arrivals: 100, timedOut: 10, latencies: repeat(10, 90) })];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.p99_ms).toBe(0.01);
    expect(s.p99_all_ms).toBe(0.05);
    expect(s.timed_out).toBe(10);
  });

  it('leaves p99_all at the successes when failures stay under 1%', () => {
    // rank ceil(0.99 x 1000) = 990 falls among the 995 successes
    const results = [seed({ arrivals: 1000, rejected: 5, latencies: repeat(10, 995) })];
    const s = summarize('c', GOALS, 0.9, results, 30_000_000);
    expect(s.p99_all_ms).toBe(0.01);
    const worse = summarize('c', GOALS, 0.9, [seed({ arrivals: 1000, rejected: 11, latencies: repeat(10, 989) })], 30_000_000);
    expect(worse.p99_all_ms).toBeCloseTo(bucketMid(bucketOf(30_000_000)) / 1000, 9);
  });

  it('counts failures as infinitely slow without a deadline', () => {
    const s = summarize('c', GOALS, 0.9, [seed({ arrivals: 100, rejected: 2, latencies: repeat(10, 98) })], 0);
    expect(s.p99_all_ms).toBe(Infinity);
    const few = summarize('c', GOALS, 0.9, [seed({ arrivals: 1000, rejected: 2, latencies: repeat(10, 998) })], 0);
    expect(few.p99_all_ms).toBe(0.01);
  });

  it('computes the t-interval across seeds', () => {
    // rates 0.96, 0.97, 0.98: mean 0.97, sd 0.01, t at the row's level with 2 degrees of freedom
    const results = [96, 97, 98].map((k) => seed({ arrivals: 100, latencies: repeat(10, k) }));
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    const half = (studentT(2, ALPHA) * 0.01) / Math.sqrt(3);
    expect(s.success).toBeCloseTo(0.97, 12);
    expect(s.success_lo).toBeCloseTo(0.97 - half, 9);
    expect(s.success_hi).toBe(Math.min(1, 0.97 + half));
  });

  it('clamps the interval to [0, 1]', () => {
    const results = [90, 95, 100].map((k) => seed({ arrivals: 100, latencies: repeat(10, k) }));
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.success_hi).toBe(1);
    expect(s.success_lo).toBeCloseTo(0.95 - (studentT(2, ALPHA) * 0.05) / Math.sqrt(3), 9);
  });

  it('gives a zero-width interval for one seed', () => {
    const s = summarize('c', GOALS, 0.9, [seed({ arrivals: 100, latencies: repeat(10, 93) })], TIMEOUT);
    expect(s.success_lo).toBe(0.93);
    expect(s.success_hi).toBe(0.93);
  });

  it('knows the t critical values', () => {
    // two-sided at alpha 0.05: the 97.5% quantiles
    expect(studentT(1, 0.05)).toBeCloseTo(12.7062, 4);
    expect(studentT(9, 0.05)).toBeCloseTo(2.2622, 4);
    expect(studentT(63, 0.05)).toBeCloseTo(1.9983, 4);
    // t(0.975, 2)
    expect(studentT(2, 0.05)).toBeCloseTo(4.302653, 6);
  });

  it('counts the seeds that meet both goals', () => {
    const results = [
      seed({ arrivals: 100, latencies: repeat(50, 95) }), // passes
      seed({ arrivals: 100, latencies: repeat(50, 80) }), // success 0.8 < 0.9
      seed({ arrivals: 100, latencies: repeat(200, 95) }), // p99 200 > 60
      seed({ arrivals: 0 }), // no arrivals: does not pass
    ];
    const s = summarize('c', GOALS, 0.9, results, 1000);
    expect(s.pass_probability).toBe(0.25);
    expect(s.passes).toBe(false);
  });

  it('passes on equality with the goals', () => {
    // success exactly 0.9 and p99 exactly 60 us meet success >= 0.9, p99 <= 60; 64 seeds,
    // as 2 could not show a pass probability of 0.9 (Clopper-Pearson's low end needs 36 of 36)
    const results = Array.from({ length: 64 }, () => seed({ arrivals: 10, latencies: repeat(60, 9) }));
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.pass_probability).toBe(1);
    expect([s.success_lo, s.success_hi]).toEqual([0.9, 0.9]);
    expect(s.verdict).toBe('PASS');
    expect(s.passes).toBe(true);
    // a microsecond over the p99 goal in every seed fails it
    const over = Array.from({ length: 64 }, () => seed({ arrivals: 10, latencies: repeat(61, 9) }));
    expect(summarize('c', GOALS, 0.9, over, TIMEOUT).verdict).toBe('FAIL');
  });

  it('needs the pass probability to reach the confidence', () => {
    const good = seed({ arrivals: 100, latencies: repeat(10, 100) });
    const bad = seed({ arrivals: 100, latencies: repeat(10, 85) });
    // 48 of 64 seeds pass: 0.75, Clopper-Pearson's 95% interval 0.6260-0.8498 (scipy's
    // beta.ppf; the row's is at 96.7%), while pooled success (0.9625) and p99 meet their goals
    // beyond noise: the confidence alone decides
    const results = [...Array.from({ length: 48 }, () => good), ...Array.from({ length: 16 }, () => bad)];
    const at = (confidence: number) => summarize('c', GOALS, confidence, results, TIMEOUT);
    expect(at(0.6).pass_probability).toBe(0.75);
    const [lo95, hi95] = clopperPearson(48, 64, 0.05);
    expect(lo95).toBeCloseTo(0.626010, 5);
    expect(hi95).toBeCloseTo(0.849844, 5);
    expect([at(0.6).pass_probability_lo, at(0.6).pass_probability_hi]).toEqual(clopperPearson(48, 64, ALPHA));
    expect(at(0.6).pass_probability_lo).toBeLessThan(lo95);
    expect(at(0.6).interval_level).toBeCloseTo(1 - 0.1 / 3, 12);
    expect([at(0.6).verdict, at(0.6).passes]).toEqual(['PASS', true]);
    // 0.75 itself lies within the interval: the seeds cannot tell, whichever side it is on
    expect([at(0.75).verdict, at(0.75).undecided, at(0.75).passes]).toEqual(['UNDECIDED', 'pass_probability', false]);
    expect([at(0.9).verdict, at(0.9).undecided, at(0.9).passes]).toEqual(['FAIL', '', false]);
    // most seeds pass, but the one big failing seed drags the pooled success under the goal
    const small = seed({ arrivals: 10, latencies: repeat(10, 10) });
    const big = seed({ arrivals: 1000, latencies: repeat(10, 800) });
    const pooled = summarize('c', GOALS, 0.8, [big, small, small, small, small], TIMEOUT);
    expect(pooled.pass_probability).toBe(0.8);
    expect(pooled.success).toBeCloseTo(840 / 1040, 12);
    // the pooled success's interval (0.78-0.83) lies wholly under the goal
    expect(pooled.success_hi).toBeLessThan(0.9);
    expect(pooled.verdict).toBe('FAIL');
    expect(pooled.passes).toBe(false);
    // every seed over the p99 goal; one seed has no spread to decide on, two show the miss
    const slow = seed({ arrivals: 100, latencies: repeat(61, 100) });
    expect(summarize('c', GOALS, 0, [slow], TIMEOUT).passes).toBe(false);
    expect(summarize('c', GOALS, 0, [slow, slow], TIMEOUT).verdict).toBe('FAIL');
  });

  it('skips seeds without successes in the p99 spread and gives NaN without any', () => {
    const results = [
      seed({ arrivals: 10, timedOut: 10, successes: 0 }),
      ...Array.from({ length: 40 }, (_, i) => seed({ arrivals: 1, latencies: [i + 1] })),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    // nearest rank over 40 values: ceil(1) = 1st and ceil(39) = 39th
    expect(s.p99_lo_ms).toBe(0.001);
    expect(s.p99_hi_ms).toBe(0.039);

    const none = summarize('c', GOALS, 0.9, [seed({ arrivals: 10, timedOut: 10, successes: 0 })], TIMEOUT);
    expect(none.success).toBe(0);
    expect(none.p50_ms).toBeNaN();
    expect(none.p99_ms).toBeNaN();
    expect(none.p99_lo_ms).toBeNaN();
    expect(none.p99_hi_ms).toBeNaN();
    expect(none.p99_all_ms).toBe(0.05);
    expect(none.pass_probability).toBe(0);
    expect(none.passes).toBe(false);
  });

  it('gives NaN rates for no arrivals at all', () => {
    const s = summarize('c', GOALS, 0.9, [], TIMEOUT);
    expect(s.seeds).toBe(0);
    expect(s.success).toBeNaN();
    expect(s.pass_probability).toBeNaN();
    expect(s.passes).toBe(false);
    expect(s.kv_hit_rate).toBe(0);
    expect(s.top_replica_share).toBe(0);
  });

  it('pools the KV hit rate and the replica share', () => {
    const results = [
      seed({ promptTokens: 1000, cachedTokens: 500, calls: [10, 80, 10] }),
      seed({ promptTokens: 3000, cachedTokens: 1500, calls: [0, 70, 30] }),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.kv_hit_rate).toBe(0.5);
    expect(s.top_replica_share).toBe(150 / 200);
    expect(s.routed_replicas).toBe(3);
  });

  it("takes the replica share over the prefill pool under disaggregation, where the router places calls", () => {
    // 2 prefill replicas, then 2 decode ones: each call counts at both
    const results = [seed({ calls: [30, 10, 20, 20], routedReplicas: 2 }), seed({ calls: [20, 20, 25, 15], routedReplicas: 2 })];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.top_replica_share).toBe((30 + 20) / 80);
    expect([s.gpu_replicas, s.routed_replicas]).toEqual([4, 2]);
  });

  it('pools utilisation, batch, waits and failure counts, per component', () => {
    const results = [
      seed({
        arrivals: 10, rejected: 1, timedOut: 2, died: 3, latencies: repeat(10, 4),
        busyMicros: 600, batchArea: 1200, longestQueue: 7, longestQueueAt: 'gpu',
        components: { gpu: gpuLoad(600, [0, 0, 0, 0, 0, 0, 1000, 3000], 1, 2) },
      }),
      seed({
        arrivals: 10, rejected: 2, latencies: repeat(10, 8),
        busyMicros: 200, batchArea: 1000, longestQueue: 3, longestQueueAt: 'gpu',
        components: { gpu: gpuLoad(200, [0, 0, 0, 2000], 2) },
      }),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT, { gpus: 2, dollarsPerHour: Number.NaN, gpuSlots: 4 });
    expect(s.gpu_utilization).toBe(0.4);
    expect(s.mean_batch).toBe(2200 / 800);
    // how full a replica's batch of 4 is while it iterates
    expect(s.batch_occupancy).toBe(2200 / 800 / 4);
    // unknown without the configuration's slots
    expect(summarize('c', GOALS, 0.9, results, TIMEOUT).batch_occupancy).toBeNaN();
    expect(s.gpu_wait_mean_ms).toBe(0.5);
    expect(s.gpu_wait_probability).toBe(0.25);
    // 12 waits: the 12th (p99's rank) is the longest, 3 ms
    expect(s.gpu_wait_p99_ms).toBeCloseTo(3, 1);
    expect([s.gpu_rejected, s.gpu_timed_out]).toEqual([3, 2]);
    // components the design lacks are NaN (null in every output)
    expect(s.tools_utilization).toBeNaN();
    expect(s.server_wait_p99_ms).toBeNaN();
    expect(s.longest_queue).toBe(7);
    expect(s.longest_queue_at).toBe('gpu');
    expect([s.rejected, s.timed_out, s.died]).toEqual([3, 2, 3]);
    expect(s.requests).toBe(20);
  });

  it('pools KV in use over replicas x windows, and averages the seeds\' peaks', () => {
    // two seeds of a GPU with capacity 1000 replica-us each: KV half in use, then a quarter
    const results = [
      seed({ arrivals: 10, latencies: repeat(10, 10), kvInUseArea: 500, kvInUsePeak: 0.75, components: { gpu: gpuLoad(600, []) } }),
      seed({ arrivals: 10, latencies: repeat(10, 10), kvInUseArea: 250, kvInUsePeak: 1, components: { gpu: gpuLoad(600, []) } }),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.kv_in_use).toBe(750 / 2000);
    expect(s.kv_in_use_peak).toBe(0.875);
    // a design without GPUs has none
    const server = summarize('c', GOALS, 0.9, [seed({ arrivals: 10, latencies: repeat(10, 10) })], TIMEOUT);
    expect([server.kv_in_use, server.kv_in_use_peak]).toEqual([Number.NaN, Number.NaN]);
  });

  it('pools preemptions and recomputed tokens over the calls done, only where gpu.kv is incremental', () => {
    const results = [
      seed({ arrivals: 10, latencies: repeat(10, 10), callsDone: 40, preemptions: 6, recomputedTokens: 3000, components: { gpu: gpuLoad(600, []) } }),
      seed({ arrivals: 10, latencies: repeat(10, 10), callsDone: 60, preemptions: 4, recomputedTokens: 2000, components: { gpu: gpuLoad(600, []) } }),
    ];
    const incremental = { gpus: 2, dollarsPerHour: Number.NaN, gpuSlots: 4, kvIncremental: true };
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT, incremental);
    expect([s.preemptions_per_call, s.recomputed_tokens_per_call]).toEqual([10 / 100, 5000 / 100]);
    // no calls done: none preempted, rather than NaN
    const idle = summarize('c', GOALS, 0.9, [seed({ arrivals: 10, latencies: repeat(10, 10), components: { gpu: gpuLoad(600, []) } })], TIMEOUT, incremental);
    expect([idle.preemptions_per_call, idle.recomputed_tokens_per_call]).toEqual([0, 0]);
    // reserve (and a configuration that does not say) never preempts: no such figure, as the offload tier's part without one
    for (const reserve of [summarize('c', GOALS, 0.9, results, TIMEOUT, { ...incremental, kvIncremental: false }), summarize('c', GOALS, 0.9, results, TIMEOUT)]) {
      expect([reserve.preemptions_per_call, reserve.recomputed_tokens_per_call]).toEqual([Number.NaN, Number.NaN]);
    }
  });

  it("says a configuration takes KV incrementally from the problem's gpu.kv", () => {
    expect(configurationCost(loadProblem('problems/hot-prefix.yaml')).kvIncremental).toBe(false);
    expect(configurationCost(loadProblem('problems/hot-prefix.yaml', ['gpu.kv=incremental'])).kvIncremental).toBe(true);
    // no GPUs, nothing to preempt
    expect(configurationCost(loadProblem('problems/mmc.yaml')).kvIncremental).toBe(false);
  });

  it('pools each pool\'s utilisation and batches and the KV transfers under gpu.disaggregation, NaN when co-located', () => {
    // 1 prefill and 3 decode replicas, 8 slots; each seed's GPU capacity is 1000 replica-us
    const results = [
      seed({
        arrivals: 10, latencies: repeat(10, 10), busyMicros: 600, batchArea: 2000, decodeBusyMicros: 450, decodeBatchArea: 1800,
        transfers: 10, transferSum: 50_000, transferWaitSum: 20_000, components: { gpu: gpuLoad(600, []) },
      }),
      seed({
        arrivals: 10, latencies: repeat(10, 10), busyMicros: 400, batchArea: 1000, decodeBusyMicros: 150, decodeBatchArea: 600,
        transfers: 30, transferSum: 110_000, components: { gpu: gpuLoad(400, []) },
      }),
    ];
    const split = { gpus: 4, dollarsPerHour: Number.NaN, gpuSlots: 8, prefillReplicas: 1, decodeReplicas: 3 };
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT, split);
    // the whole GPU's, as before: every replica's busy time over every replica's capacity
    expect([s.gpu_utilization, s.batch_occupancy]).toEqual([1000 / 2000, 3000 / 1000 / 8]);
    // the prefill pool: the totals less the decode pool's, over a quarter of the capacity
    expect(s.prefill_utilization).toBe((1000 - 600) / 500);
    expect(s.decode_utilization).toBe(600 / 1500);
    expect(s.prefill_batch_occupancy).toBe((3000 - 2400) / (1000 - 600) / 8);
    expect(s.decode_batch_occupancy).toBe(2400 / 600 / 8);
    // link time and wait for KV room, over the transfers, in ms
    expect(s.transfer_ms).toBe(160_000 / 40 / 1000);
    expect(s.transfer_wait_ms).toBe(20_000 / 40 / 1000);
    // nothing transferred, nothing busy: none of it rather than NaN
    const idle = summarize('c', GOALS, 0.9, [seed({ arrivals: 10, latencies: repeat(10, 10), components: { gpu: gpuLoad(0, []) } })], TIMEOUT, split);
    expect([idle.prefill_utilization, idle.decode_utilization, idle.prefill_batch_occupancy, idle.decode_batch_occupancy, idle.transfer_ms, idle.transfer_wait_ms]).toEqual([0, 0, 0, 0, 0, 0]);
    // co-located (0 prefill replicas, or a configuration that does not say): no pools
    for (const colocated of [summarize('c', GOALS, 0.9, results, TIMEOUT, { ...split, prefillReplicas: 0, decodeReplicas: 0 }), summarize('c', GOALS, 0.9, results, TIMEOUT)]) {
      expect([colocated.prefill_utilization, colocated.decode_utilization, colocated.prefill_batch_occupancy, colocated.decode_batch_occupancy, colocated.transfer_ms, colocated.transfer_wait_ms])
        .toEqual([Number.NaN, Number.NaN, Number.NaN, Number.NaN, Number.NaN, Number.NaN]);
    }
  });

  it("takes the prefill and decode pools from the problem's gpu.disaggregation", () => {
    const pools = (sets: string[] = []) => {
      const c = configurationCost(loadProblem('problems/hot-prefix.yaml', sets));
      return [c.prefillReplicas, c.decodeReplicas];
    };
    expect(pools()).toEqual([0, 0]);
    expect(pools(['gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=131072'])).toEqual([2, 4]);
    // prefill 0 is co-located, as without the block
    expect(pools(['gpu.disaggregation.prefill=0', 'gpu.disaggregation.bytesPerToken=131072'])).toEqual([0, 0]);
    const mmc = configurationCost(loadProblem('problems/mmc.yaml'));
    expect([mmc.prefillReplicas, mmc.decodeReplicas]).toEqual([0, 0]);
  });

  it('pools TTFT and TPOT, and holds them to their goals when set', () => {
    // 64 alike seeds: enough to decide a pass probability of 1 against 0.9
    const results = Array.from({ length: 64 }, () => seed({
      arrivals: 100, latencies: repeat(10, 100),
      ttft: histogram(repeat(5, 100)), tpot: histogram([...repeat(2, 98), 40, 40]),
    }));
    const free = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect([free.ttft_p50_ms * 1000, free.ttft_p99_ms * 1000]).toEqual([5, 5]);
    expect([free.tpot_p50_ms * 1000, free.tpot_p95_ms * 1000, free.tpot_p99_ms * 1000]).toEqual([2, 2, bucketMid(bucketOf(40))]);
    // no sums given: no mean
    expect([free.ttft_mean_ms, free.tpot_mean_ms]).toEqual([Number.NaN, Number.NaN]);
    expect(free.passes).toBe(true);
    expect(summarize('c', { ...GOALS, ttftP99: 5 }, 0.9, results, TIMEOUT).passes).toBe(true);
    expect(summarize('c', { ...GOALS, ttftP99: 4 }, 0.9, results, TIMEOUT).passes).toBe(false);
    const tpotMissed = summarize('c', { ...GOALS, tpotP99: 39 }, 0.9, results, TIMEOUT);
    expect([tpotMissed.passes, tpotMissed.pass_probability]).toEqual([false, 0]);
  });

  it('pools TTFT and TPOT means over the seeds\' calls, exactly', () => {
    // TTFT: 3 calls summing 30 us, then 1 call of 1,000,001 us; TPOT: 2 calls summing 8 us, then none
    const results = [
      seed({ callsDone: 3, ttft: histogram([5, 10, 15]), ttftSum: 30, tpotCalls: 2, tpot: histogram([3, 5]), tpotSum: 8 }),
      seed({ callsDone: 1, ttft: histogram([1_000_001]), ttftSum: 1_000_001, tpotCalls: 0, tpot: histogram([]), tpotSum: 0 }),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.ttft_mean_ms).toBe(1_000_031 / 4 / 1000);
    expect(s.tpot_mean_ms).toBe(0.004);
  });

  it('weighs the mean inter-token latency by tokens, where TPOT\'s weighs calls', () => {
    // seed 1: a call of 2 tokens decoding 10 us (TPOT 10), one of 11 decoding 20 us (TPOT 2) and
    // one of a single token; seed 2: one call of a single token, no gap
    const results = [
      seed({ callsDone: 3, outputTokens: 2 + 11 + 1, tpotCalls: 2, tpot: histogram([10, 2]), tpotSum: 12, itlSum: 30 }),
      seed({ callsDone: 1, outputTokens: 1, tpotCalls: 0, tpot: histogram([]), tpotSum: 0, itlSum: 0 }),
    ];
    const s = summarize('c', GOALS, 0.9, results, TIMEOUT);
    expect(s.itl_mean_ms).toBe(30 / 11 / 1000);
    expect(s.tpot_mean_ms).toBe(0.006);
    expect(summarize('c', GOALS, 0.9, [results[1]!], TIMEOUT).itl_mean_ms).toBeNaN();
  });

  it('gives throughput as successes per second of every seed\'s measured window', () => {
    const results = [
      seed({ arrivals: 12, latencies: repeat(10, 10), measuredMicros: 2e6 }),
      seed({ arrivals: 10, latencies: repeat(10, 5), measuredMicros: 3e6 }),
    ];
    expect(summarize('c', GOALS, 0.9, results, TIMEOUT).throughput_per_s).toBe(3);
    expect(summarize('c', GOALS, 0.9, [], TIMEOUT).throughput_per_s).toBeNaN();
  });
});
