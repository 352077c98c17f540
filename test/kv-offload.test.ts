// The KV offload tier beyond GPU memory (issue 29, docs/model.md section 3) in the reference
// engine: what the cache evicts moves to the tier, a prompt that finds its context there loads
// it back (its tokens cached, its first prefill step longer by the load), the tier evicts by
// its own LRU, and a problem without a tier runs as before.
import { describe, expect, it } from 'vitest';
import { runReference } from '../src/engine/reference.js';
import { ServesimError } from '../src/errors.js';
import { loadProblem } from '../src/problem/parse.js';
import { configFor, decodeAll, problemFile } from './support.js';
import { OFFLOAD_STORIES, offloadGpu, traceProblem, wholeWindow } from './trace-support.js';

const SEEDS = 3;

function replay(name: string, story: { lines: Parameters<typeof traceProblem>[1]; gpu?: string }, gpu = story.gpu) {
  const { config } = traceProblem(name, story.lines, wholeWindow(story.lines), gpu);
  return decodeAll(config, runReference(config, 1, 0, SEEDS));
}

describe('the KV offload tier', () => {
  for (const [name, story] of Object.entries(OFFLOAD_STORIES)) {
    it(story.title, () => {
      for (const r of replay(name, story)) {
        expect(r.cachedTokens).toBe(story.cached);
        expect(r.offloadTokens).toBe(story.offloaded);
      }
    });
  }

  it('spends the load in the step that first prefills the call: bytes a token over the bandwidth, floored to the us once', () => {
    const story = OFFLOAD_STORIES['offload-load']!;
    const ttft = (bandwidth: string): number[] => replay(`offload-ttft-${bandwidth.replace(/\W/g, '-')}`, story, offloadGpu(4096, bandwidth)).map((r) => r.ttftSum);
    // 1,024 tokens of 131,072 bytes: 5,368.7 us at 25 GB/s, 10,737.4 us at 12.5 GB/s
    const load = (bytesPerSecond: number): number => Math.floor((1024 * 131072 * 1e6) / bytesPerSecond);
    const fast = ttft('25GB/s');
    const slow = ttft('12.5GB/s');
    for (let i = 0; i < SEEDS; i++) expect(slow[i]! - fast[i]!).toBe(load(12.5e9) - load(25e9));
  });

  it('a tier of 0 tokens is none: the records are those of the problem without one, word for word', () => {
    const without = configFor('coding-agents', ['gpu.kvTokens=60000']).config;
    const zero = configFor('coding-agents', ['gpu.kvTokens=60000', 'gpu.offload.tokens=0', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072']).config;
    expect(zero.params).toEqual(without.params);
    expect(runReference(zero, 5, 0, 4)).toEqual(runReference(without, 5, 0, 4));
  });

  it("brings an agent's evicted session back: its steps find more cached, the tier's share of it, and no fewer", () => {
    // a cache of 60,000 tokens holds about ten sessions' contexts of the 40 or so in flight
    const sets = ['gpu.kvTokens=60000', 'router.policy=bounded-affinity'];
    const run = (more: readonly string[]) => decodeAll(configFor('coding-agents', [...sets, ...more]).config, runReference(configFor('coding-agents', [...sets, ...more]).config, 5, 0, 4));
    const without = run([]);
    const tier = run(['gpu.offload.tokens=600000', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072']);
    const rate = (rs: typeof without, field: 'cachedTokens' | 'offloadTokens') => rs.reduce((s, r) => s + r[field], 0) / rs.reduce((s, r) => s + r.promptTokens, 0);
    expect(rate(without, 'offloadTokens')).toBe(0);
    expect(rate(tier, 'offloadTokens')).toBeGreaterThan(0.1);
    expect(rate(tier, 'cachedTokens')).toBeGreaterThan(rate(without, 'cachedTokens') + 0.1);
  });
});

describe('gpu.offload in a problem file', () => {
  const load = (sets: readonly string[]) => () => loadProblem(problemFile('hot-prefix'), sets);
  const offload = (more: readonly string[]) => ['gpu.offload.tokens=800000', ...more];

  it("takes the profile's model's KV bytes a token, and needs them where the profile has no model", () => {
    expect(loadProblem(problemFile('conversation-trace'), ['gpu.offload.tokens=1000000']).gpu!.offload).toEqual({ tokens: 1_000_000, bandwidth: 25e9, bytesPerToken: 131072 });
    expect(load(offload(['gpu.offload.bandwidth=25GB/s']))).toThrow(/gpu\.offload\.bytesPerToken: required: gpu\.profile 8b-h100 does not know its model's KV bytes a token/);
  });

  it('refuses a bandwidth without a byte-rate unit, one too fast to hold in whole nanoseconds a token, and a tier of more entries than the engines index', () => {
    const err = (sets: readonly string[]): ServesimError => {
      try {
        load(sets)();
      } catch (e) {
        return e as ServesimError;
      }
      throw new Error('no error');
    };
    expect(err(offload(['gpu.offload.bandwidth=25', 'gpu.offload.bytesPerToken=131072'])).message).toMatch(/gpu\.offload\.bandwidth: must be a byte rate with a unit, e.g\. 25GB\/s/);
    expect(err(offload(['gpu.offload.bandwidth=25GW/s', 'gpu.offload.bytesPerToken=131072'])).message).toMatch(/gpu\.offload\.bandwidth: unknown unit "GW\/s"/);
    expect(err(offload(['gpu.offload.bandwidth=90TB/s', 'gpu.offload.bytesPerToken=16'])).message).toMatch(/gpu\.offload\.bandwidth: loads a token of 16 bytes in under half a nanosecond/);
    // hot prefix's smallest cached context is its 12,000-token prefix: 4,096 of them are 49 M tokens
    expect(err(['gpu.offload.tokens=50000000', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072']).message).toMatch(/gpu\.offload\.tokens: 50000000 tokens hold 4167 entries/);
  });
});
