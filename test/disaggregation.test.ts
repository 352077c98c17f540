/**
 * Prefill/decode disaggregation (docs/model.md section 3): a call's prompt is computed on a
 * prefill replica, which emits its first token; its KV then moves over the link to a decode
 * replica with room for it, which decodes the rest.
 */
import { describe, expect, it } from 'vitest';
import type { EngineConfig } from '../src/engine/compile.js';
import { R } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { dollarsPerHour, gpuCount } from '../src/model/problem.js';
import { loadProblem } from '../src/problem/parse.js';
import { listPrice } from '../src/problem/profiles.js';
import { configFor, problemFile, thrown } from './support.js';
import { line, recordedCalls, traceProblem, wholeWindow, wide, type RecordedCall } from './trace-support.js';

/** Instance 0's record and its counted model calls of more than the small requests' 100 prompt tokens, by job index. */
function run(config: EngineConfig): { record: Uint32Array; calls: RecordedCall[] } {
  const { record, calls } = recordedCalls(config);
  return { record, calls: calls.filter((c) => c.prompt > 100) };
}

// 131,072 KV bytes a token (Llama 3.1 8B in BF16) at 10 GB/s: 13.107 us a token, to the ns
const LINK = 'disaggregation: { prefill: 1, latency: 2ms, bandwidth: 10GB/s, bytesPerToken: 131072 }';
const linkMicros = (tokens: number): number => 2000 + tokens * 13 + Math.floor(tokens / 1000) * 107 + Math.floor(((tokens % 1000) * 107) / 1000);

describe('prefill/decode disaggregation', () => {
  // One request of 1,014 prompt tokens and 300 output tokens, alone (a small request in the
  // warm-up fixes the window's start; ten more, a second apart, once it has ended)
  const small = (k: number) => ({ timestamp: k * 1000, input_length: 100, output_length: 3, hash_ids: [900 + k] });
  const lines = [small(0), line(1, [1, 2], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];

  it("ends a call's time to first token at its prefill replica, and its decode later by exactly its KV's transfer", () => {
    const together = run(traceProblem('colocated', lines, wholeWindow(lines), 'replicas: 1, slots: 8, kvTokens: 400000').config);
    const split = run(traceProblem('split', lines, wholeWindow(lines), `replicas: 2, slots: 8, kvTokens: 400000, ${LINK}`).config);
    const [alone, call] = [together.calls[0]!, split.calls[0]!];
    expect(call.replica).toBe(1);
    // the same prefill step on an idle replica: the same first token
    expect(call.firstAt).toBe(alone.firstAt);
    // its 1,014 prompt tokens and its first token move: 2 ms + 1,015 x 13.107 us = 15.303 ms;
    // then the same 299 decode steps of one sequence
    expect(linkMicros(1015)).toBe(15_303);
    expect(call.end - alone.end).toBe(15_303);
    // and the nine small requests in the measured window (the last ends it)
    expect(split.record[R.TRANSFERS]).toBe(10);
    expect(wide(split.record, R.TRANSFER_WAIT_SUM)).toBe(0);
    expect(together.record[R.TRANSFERS]).toBe(0);
  });

  it('caches a prefix on the decode replica it moved to: a later prompt sharing its first block moves 512 tokens fewer', () => {
    const shared = [small(0), line(1, [1, 2], 300), line(5, [1, 3], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];
    const { record } = run(traceProblem('split-shared', shared, wholeWindow(shared), `replicas: 2, slots: 8, kvTokens: 400000, ${LINK}`).config);
    // the small requests have no full block to cache: 100 prompt tokens and the first token each
    // (the nine in the measured window: the warm-up's and the last, which ends it, count nowhere)
    expect(record[R.TRANSFERS]).toBe(11);
    expect(wide(record, R.TRANSFER_SUM)).toBe(linkMicros(1015) + linkMicros(1015 - 512) + 9 * linkMicros(101));
  });

  it('waits at the decode replica for KV room before the transfer starts', () => {
    // a decode replica of 2,300 tokens holds one of two 1,014 + 300 token calls under reserve
    const two = [small(0), line(1, [1, 2], 300), line(1.001, [3, 4], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];
    const { record, calls } = run(traceProblem('split-wait', two, wholeWindow(two), `replicas: 2, slots: 8, kvTokens: 2300, ${LINK}`).config);
    const [first, second] = [calls[0]!, calls[1]!];
    // the second's transfer starts when the first's decode has ended and freed its KV
    expect(second.end).toBeGreaterThan(first.end + linkMicros(1015));
    expect(wide(record, R.TRANSFER_WAIT_SUM)).toBeGreaterThan(first.end - second.firstAt - 1000);
  });

  it('gives the records of a co-located pool with prefill 0, whatever the link', () => {
    const sets = ['traffic.duration=8s', 'traffic.warmup=4s'];
    const together = runReference(configFor('hot-prefix', sets, 'server-dies').config, 7, 0, 2);
    const zero = configFor('hot-prefix', [...sets, 'gpu.disaggregation.prefill=0', 'gpu.disaggregation.bandwidth=1GB/s'], 'server-dies');
    expect(zero.problem.gpu!.disaggregation).toBeUndefined();
    expect(runReference(zero.config, 7, 0, 2)).toEqual(together);
  });
});

/** The error hot prefix with `sets` gives. */
const err = (sets: readonly string[]) => thrown(() => loadProblem(problemFile('hot-prefix'), sets));

describe('gpu.disaggregation in a problem file', () => {

  it("takes the profile's model's KV bytes a token, and needs them where the profile has no model", () => {
    const trace = loadProblem(problemFile('conversation-trace'), ['gpu.disaggregation.prefill=1']).gpu!;
    expect(trace.disaggregation).toEqual({
      prefill: 1, policy: 'least-loaded', latency: 1000, bandwidth: 50e9, bytesPerToken: 131072,
      // the decode replicas as gpu's
      decode: { slots: trace.slots, kvTokens: trace.kvTokens, profile: trace.profile, pricePerHour: trace.pricePerHour },
    });
    expect(err(['gpu.disaggregation.prefill=2']).message).toMatch(/gpu\.disaggregation\.bytesPerToken: required: gpu\.profile 8b-h100 does not know its model's KV bytes a token/);
  });

  it("sets a field of the decode replicas' profile from gpu's, as gpu.profile's fields are set", () => {
    const sets = ['gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=131072', 'gpu.disaggregation.decode.profile.base=12ms'];
    const gpu = loadProblem(problemFile('hot-prefix'), sets).gpu!;
    expect(gpu.profile).toMatchObject({ name: '8b-h100', base: 8000 });
    expect(gpu.disaggregation!.decode.profile).toMatchObject({ name: '8b-h100 (modified)', base: 12_000, perSeq: 250, prefillRate: 16 });
  });

  it('refuses a pool with no replica left to decode, a link too fast for whole nanoseconds a token, and a ring policy for the decode pool', () => {
    const bytes = 'gpu.disaggregation.bytesPerToken=131072';
    expect(err(['gpu.disaggregation.prefill=6', bytes]).message).toMatch(/gpu\.disaggregation\.prefill: 6 prefill replicas of gpu\.replicas 6 leave none to decode/);
    expect(err(['gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=1', 'gpu.disaggregation.bandwidth=9TB/s']).message).toMatch(/gpu\.disaggregation\.bandwidth: moves a token of 1 bytes in under half a nanosecond/);
    expect(err(['gpu.disaggregation.prefill=2', bytes, 'gpu.disaggregation.policy=prefix-affinity']).message).toMatch(/gpu\.disaggregation\.policy/);
    expect(err(['gpu.disaggregation.prefill=2', bytes, 'gpu.disaggregation.bandwidth=50']).message).toMatch(/gpu\.disaggregation\.bandwidth: must be a byte rate with a unit/);
  });
});

describe("the decode replicas' own profile, slots and KV (gpu.disaggregation.decode)", () => {
  const small = (k: number) => ({ timestamp: k * 1000, input_length: 100, output_length: 3, hash_ids: [900 + k] });
  const lines = [small(0), line(1, [1, 2], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];
  const split = (decode: string) => run(traceProblem(`split-own-${decode.length}`, lines, wholeWindow(lines), `replicas: 2, slots: 8, kvTokens: 400000, ${LINK.replace(' }', `, decode: { ${decode} } }`)}`).config);

  it("decodes at the decode profile's speed: 2 ms more a step, 299 steps", () => {
    const same = split('slots: 8').calls[0]!;
    const slower = split("profile: { name: slower, base: 10ms, perSeq: 250us, prefillRate: 16, chunk: 2048 }").calls[0]!;
    // the prefill replica's profile is 8b-h100's (base 8 ms): the first token is the same
    expect(slower.firstAt).toBe(same.firstAt);
    expect(slower.end - same.end).toBe(299 * 2000);
  });

  it('admits at the decode replica by its own slots and KV, and costs each pool at its own GPUs and price', () => {
    // one slot: the second of two calls waits for the first's decode to end
    const two = [small(0), line(1, [1, 2], 300), line(1.001, [3, 4], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];
    const one = run(traceProblem('split-one-slot', two, wholeWindow(two), `replicas: 2, slots: 8, kvTokens: 400000, ${LINK.replace(' }', ', decode: { slots: 1 } }')}`).config);
    expect(one.calls[1]!.end).toBeGreaterThan(one.calls[0]!.end + linkMicros(1015));
    const problem = loadProblem(problemFile('long-prompts'), ['gpu.disaggregation.prefill=3', 'gpu.disaggregation.decode.profile=llama-3.1-8b-instruct/a100-80/tp2']);
    const decode = problem.gpu!.disaggregation!.decode;
    // its KV capacity and its GPU type's list price, not gpu's
    expect([decode.slots, decode.kvTokens, decode.pricePerHour]).toEqual([64, 2114224, listPrice('A100-80')]);
    expect(problem.gpu!.pricePerHour).toBe(listPrice('H100'));
    // 3 H100s and 5 replicas of 2 A100s
    expect(gpuCount(problem)).toBe(3 + 5 * 2);
    expect(dollarsPerHour(problem)).toBeCloseTo(3 * listPrice('H100')! + 10 * listPrice('A100-80')!, 10);
    expect(err(['gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=131072', 'gpu.disaggregation.decode.kvTokens=1000']).message).toMatch(
      /gpu\.disaggregation\.decode\.kvTokens: 1000 tokens cannot hold the smallest request/,
    );
  });
});
