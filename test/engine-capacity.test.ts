/**
 * The reference engine runs an instance in arrays of fixed size (LIMITS.stateWords and
 * LIMITS.paramsWords, src/engine/simulate.ts): the largest problems the other limits allow fit
 * them, a component of a million slots sizes its job table by the arrivals rather than the
 * slots, and a case with more failures than the limit is refused naming the field.
 */
import { describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { ServesimError } from '../src/errors.js';
import { LIMITS } from '../src/problem/limits.js';
import { problemFromObject, selectCases } from '../src/problem/parse.js';
import { decodeAll } from './support.js';

function compiled(raw: object) {
  const problem = problemFromObject(raw);
  return compile(problem, selectCases(problem, ['as-given'])[0]!);
}

const goals = { success: 0.99, p99: '3s' };

/** Every arrival the limit allows (200,000), to 256 servers of a million slots that wait for up to 3,000 s. */
const largestJob = {
  id: 'largest-job',
  title: 'The largest job problem',
  goals,
  traffic: { rate: 1000, duration: '190s', warmup: '10s' },
  workload: { kind: 'job' },
  server: { replicas: LIMITS.replicas, slots: LIMITS.slots, service: { dist: 'exponential', mean: '100ms' }, timeout: '3000s' },
  cases: ['as-given'],
};

/** Request arrivals at the limit (50,000), every GPU replica, slot, ring point, prefix, cache and offload entry allowed, and the most failures. */
const largestRequest = {
  id: 'largest-request',
  title: 'The largest request problem',
  goals,
  traffic: { rate: 1250, duration: '30s', warmup: '10s' },
  workload: {
    kind: 'request',
    prefixes: Array.from({ length: LIMITS.prefixes }, () => ({ tokens: 12000, weight: 1 })),
    share: 0.85,
    suffix: 300,
    unique: 2000,
    output: 60,
  },
  lb: { overhead: '1ms' },
  app: { replicas: LIMITS.replicas, slots: LIMITS.slots, timeout: '3000s', overhead: '5ms' },
  router: { policy: 'prefix-affinity', slots: 100000, overhead: '1ms', virtualNodes: LIMITS.virtualNodes },
  // 3,838 of the 12,000-token prefix, plus a slot's each and two: the 4,096 entries allowed; and
  // 4,095 in the offload tier, plus one
  gpu: {
    replicas: LIMITS.gpuReplicas, slots: LIMITS.gpuSlots, kvTokens: 3838 * 12000, profile: '8b-h100',
    offload: { tokens: 4095 * 12000, bandwidth: '1TB/s', bytesPerToken: 131072 },
  },
  failures: Array.from({ length: LIMITS.failures }, () => ({})),
  cases: ['as-given'],
};

describe('the reference engine\'s fixed arrays', () => {
  it('hold the largest job and request problems the limits allow', () => {
    const job = compiled(largestJob);
    const request = compiled(largestRequest);
    expect(request.params[P.CACHE_CAP]).toBe(LIMITS.cacheEntries);
    expect(request.params[P.OFFLOAD_CAP]).toBe(LIMITS.cacheEntries);
    expect(request.params[P.N_FAILURES]).toBe(LIMITS.failures);
    for (const config of [job, request]) {
      expect(config.stateWords).toBeLessThanOrEqual(LIMITS.stateWords);
      expect(config.params.length).toBeLessThanOrEqual(LIMITS.paramsWords);
    }
    // the job table holds every arrival with room (a Poisson bound), never a slot's worth each
    expect(job.params[P.JOB_CAP]).toBeGreaterThan(200_000);
    expect(job.params[P.JOB_CAP]).toBeLessThan(210_000);
  });

  it('runs a server of a million slots, its job table sized by the arrivals', () => {
    const config = compiled({ ...largestJob, traffic: { rate: 20, duration: '20s', warmup: '5s' } });
    expect(config.params[P.JOB_CAP]).toBeLessThan(1000);
    const [result] = decodeAll(config, runReference(config, 1, 0, 1));
    expect(result!.overloaded).toBe(0);
    expect(result!.successes).toBe(result!.arrivals);
  });

  it('refuses to compile, naming the array, a case built past the parser (11,000 failures)', () => {
    const problem = problemFromObject(largestRequest);
    const scenario = selectCases(problem, ['as-given'])[0]!;
    const failures = Array.from({ length: 11 }, () => scenario.failures).flat();
    expect(() => compile(problem, { ...scenario, failures })).toThrow(
      new ServesimError('SERVESIM_CAPACITY_EXCEEDED', 'case as-given: its params block, 98,898 words, is over the engines\' limit of 65,536'),
    );
  });

  it('refuses a case with more failures than the limit, naming the field', () => {
    const raw = { ...largestRequest, failures: Array.from({ length: LIMITS.failures + 1 }, () => ({})) };
    expect(() => problemFromObject(raw)).toThrow(ServesimError);
    expect(() => problemFromObject(raw)).toThrow('failures: case as-given has 1,001 replica failures, over the limit of 1,000 a case');
  });
});
