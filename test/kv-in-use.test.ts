/**
 * KV in use (docs/model.md sections 3 and 5): what a GPU replica's running sequences hold, their
 * reservations and the cache entries they pin with those entries' ancestors. The reference
 * engine is stepped one event time at a time, and at each its state is checked against that
 * definition, counted afresh from the running sequences and the entries; the held values,
 * integrated between the steps, must be the record's R.KV_AREA and R.KV_PEAK exactly. With a KV
 * offload tier, each step checks the tier too: its tokens within its size, counted once, none
 * held between events, and no context both in it and in the cache.
 */
import { describe, expect, it } from 'vitest';
import type { EngineConfig } from '../src/engine/compile.js';
import { E, ENTRY_WORDS, G, J, JOB_WORDS, OE, OFFLOAD_WORDS, P, R, REPLICA_HEADER_WORDS, RP } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { decodeResult, extractResult } from '../src/engine/result.js';
import { advance, init, type EngineBuffers } from '../src/engine/simulate.js';
import { configurationCost, summarize } from '../src/model/summarize.js';
import { busiestComponent } from '../src/model/summary.js';
import { configFor } from './support.js';
import { line, traceProblem, type Line } from './trace-support.js';

const NONE = 0xffffffff;
const TWO_32 = 2 ** 32;

/** What one instance held, from its state at every event time, against what its record says. */
interface Held {
  /** Per replica, Σ floor(held / P.KV_UNIT) x microseconds of the measured window. */
  readonly area: number;
  /** The most units one replica held for a while in the measured window. */
  readonly peak: number;
  /** Steps where some replica held more than nothing: the check saw sequences at work. */
  readonly busySteps: number;
  /** Steps where an entry above a pinned one was held: the radix tree's ancestors were counted. */
  readonly ancestorSteps: number;
  /** Steps where some replica's offload tier held tokens. */
  readonly offloadSteps: number;
  readonly record: Uint32Array;
}

/**
 * Runs instance `instance` event time by event time (advance to the next event's time + 1),
 * checking every replica's RP.KV_HELD and every entry's PINS against a count from the running
 * sequences, and integrating the held units as the engine's kvNote should.
 */
function stepThrough(config: EngineConfig, instance: number): Held {
  const p = config.params;
  const buffers: EngineBuffers = { params: p, tables: config.tables, state: new Uint32Array(config.stateWords) };
  const st = buffers.state;
  init(buffers, 0, 7, instance);
  const replicas = p[P.GPU_REPLICAS]!;
  // a decode replica's pool words, its KV size and unit, are its own (gpu.disaggregation)
  const poolAt = (r: number) => (p[P.PREFILL_REPLICAS]! > 0 && r >= p[P.PREFILL_REPLICAS]! ? p[P.DECODE_SHIFT]! : 0);
  const unit = (r: number) => p[poolAt(r) + P.KV_UNIT]!;
  const replicaAt = (r: number) => p[P.OFF_REPLICAS]! + r * p[P.REPLICA_STRIDE]!;
  const entryAt = (r: number, e: number) => replicaAt(r) + REPLICA_HEADER_WORDS + p[P.RUN_CAP]! + e * ENTRY_WORDS;
  const offloadAt = (r: number, t: number) => entryAt(r, p[P.CACHE_CAP]!) + t * OFFLOAD_WORDS;
  const jobAt = (j: number) => p[P.OFF_JOBS]! + j * JOB_WORDS;
  const measured = (from: number, to: number) => Math.max(0, Math.min(to, p[P.MEASURE_END]!) - Math.max(from, p[P.WARMUP]!));
  let area = 0;
  let peak = 0;
  let busySteps = 0;
  let ancestorSteps = 0;
  let offloadSteps = 0;
  let before = 0;
  let held = new Array<number>(replicas).fill(0);
  for (;;) {
    const heapTop = st[G.HEAP_LEN]! > 0 ? st[p[P.OFF_HEAP]!]! : NONE;
    const next = Math.min(st[G.NEXT_ARRIVAL]!, heapTop);
    const done = next === NONE || advance(buffers, 0, next + 1);
    const now = st[G.NOW]!;
    expect(st[G.STOPPED]).toBe(0);
    for (let r = 0; r < replicas; r++) {
      const t = measured(before, now);
      const units = Math.floor(held[r]! / unit(r));
      area += units * t;
      if (t > 0) peak = Math.max(peak, units);
    }
    before = now;
    held = Array.from({ length: replicas }, (_, r) => {
      const rb = replicaAt(r);
      // each entry's pins: the running sequences whose pinned entry is it or one below it
      const pins = new Map<number, number>();
      let reserved = 0;
      for (let i = 0; i < st[rb + RP.N_RUN]!; i++) {
        const jb = jobAt(st[rb + REPLICA_HEADER_WORDS + i]!);
        reserved += st[jb + J.RESERVED]!;
        for (let e = st[jb + J.ENTRY]!; e !== NONE; e = st[entryAt(r, e) + E.PARENT]!) pins.set(e, (pins.get(e) ?? 0) + 1);
      }
      let entries = 0;
      let cached = 0;
      const keys = new Set<number>();
      for (let e = 0; e < st[rb + RP.ENTRIES]!; e++) {
        const eb = entryAt(r, e);
        expect(st[eb + E.PINS]).toBe(pins.get(e) ?? 0);
        if (st[eb + E.PINS]! > 0) entries += st[eb + E.TOKENS]!;
        if (st[eb + E.PINS]! > 0 && st[eb + E.CHILDREN]! > 0) ancestorSteps++;
        cached += st[eb + E.TOKENS]!;
        if (st[eb + E.KEY] !== 0) keys.add(st[eb + E.KEY]!);
      }
      // the cache holds its entries and the running sequences' reservations, within its size
      expect(st[rb + RP.KV_USED]).toBe(cached + reserved);
      expect(st[rb + RP.KV_USED]).toBeLessThanOrEqual(p[poolAt(r) + P.KV_TOKENS]!);
      let offloaded = 0;
      for (let t = 0; t < st[rb + RP.OFFLOAD_ENTRIES]!; t++) {
        const ob = offloadAt(r, t);
        offloaded += st[ob + OE.TOKENS]!;
        expect(st[ob + OE.HELD]).toBe(0);
        if (st[ob + OE.KEY] !== 0) expect(keys.has(st[ob + OE.KEY]!)).toBe(false);
      }
      expect(st[rb + RP.OFFLOAD_USED]).toBe(offloaded);
      expect(offloaded).toBeLessThanOrEqual(p[P.OFFLOAD_TOKENS]!);
      if (offloaded > 0) offloadSteps++;
      expect(st[rb + RP.KV_HELD]).toBe(reserved + entries);
      expect(st[rb + RP.KV_HELD]).toBeLessThanOrEqual(st[rb + RP.KV_USED]!);
      return reserved + entries;
    });
    if (held.some((h) => h > 0)) busySteps++;
    if (done) break;
  }
  // nothing runs once every arrival has resolved
  expect(held.every((h) => h === 0)).toBe(true);
  return { area, peak, busySteps, ancestorSteps, offloadSteps, record: extractResult(config, st, 0) };
}

function expectCounted(config: EngineConfig, instances: number): Held[] {
  return Array.from({ length: instances }, (_, i) => {
    const held = stepThrough(config, i);
    expect(held.busySteps).toBeGreaterThan(100);
    expect(held.record[R.KV_AREA]! + held.record[R.KV_AREA + 1]! * TWO_32).toBe(held.area);
    expect(held.record[R.KV_PEAK]).toBe(held.peak);
    expect(held.peak).toBeGreaterThan(0);
    return held;
  });
}

/**
 * Requests every 50 ms, each 150 output tokens (over a second on the GPU, so they overlap), whose
 * prompts share a system block and one of three topic blocks, then blocks of their own: the
 * radix tree's shared nodes are held by several sequences at once, and a KV of 40,000 tokens
 * on 8 slots makes the cache evict.
 */
function sharedTree(): Line[] {
  return Array.from({ length: 160 }, (_, i) => ({
    ...line(i * 0.05, [1, 10 + (i % 3), 100 + (i % 7), 1000 + i], 150),
  }));
}

describe('KV in use', () => {
  it('is what running sequences reserve and the prefix entries they pin, on a shared prefix with a replica reset', () => {
    const { config } = configFor('hot-prefix', ['router.policy=least-loaded', 'gpu.slots=16', 'traffic.duration=6s', 'traffic.warmup=2s'], 'server-dies');
    expectCounted(config, 2);
  });

  it("counts a session's cached context only while its step runs, and the system prompt while any does", () => {
    const { config } = configFor('coding-agents', ['traffic.duration=12s', 'traffic.warmup=3s']);
    expectCounted(config, 1);
  });

  it('counts the entries above a pinned node of a trace\'s radix tree, each once however many sequences hold it', () => {
    const { config } = traceProblem('kv-in-use-tree', sharedTree(), 'duration: 6s, warmup: 1s', 'replicas: 2, slots: 8, kvTokens: 40000');
    const [held] = expectCounted(config, 1);
    expect(held!.ancestorSteps).toBeGreaterThan(0);
  });

  it('counts what a load from the KV offload tier brings back as the cache does, and the tier holds each context once within its size', () => {
    const offload = 'offload: { tokens: 60000, bandwidth: 25GB/s, bytesPerToken: 131072 }';
    // the shared tree's prompts with a whole last block, one of 40 that come back 2 s later
    const lines = Array.from({ length: 160 }, (_, i) => line(i * 0.05, [1, 10 + (i % 3), 100 + (i % 7), 1000 + (i % 40)], 150, true));
    const { config } = traceProblem('kv-in-use-offload', lines, 'duration: 6s, warmup: 1s', `replicas: 2, slots: 8, kvTokens: 20000, ${offload}`);
    const [held] = expectCounted(config, 1);
    expect(held!.offloadSteps).toBeGreaterThan(100);
    expect(held!.record[R.OFFLOAD_TOKENS]).toBeGreaterThan(0);
  });

  it("brings an agent's session back from the tier, and loses the tier with the cache when its replica resets", () => {
    const sets = ['traffic.duration=12s', 'traffic.warmup=3s', 'gpu.kvTokens=60000', 'gpu.offload.tokens=300000', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072'];
    const [held] = expectCounted(configFor('coding-agents', sets, 'server-dies').config, 1);
    expect(held!.offloadSteps).toBeGreaterThan(100);
    expect(held!.record[R.OFFLOAD_TOKENS]).toBeGreaterThan(0);
  });

  it('counts each token a sequence decodes under gpu.kv incremental, within the KV through its preemptions and a reset', () => {
    const sets = ['traffic.duration=6s', 'traffic.warmup=2s', 'gpu.kvTokens=20000', 'gpu.kv=incremental', 'gpu.slots=16', 'router.policy=least-loaded', 'workload.output=200'];
    const [held] = expectCounted(configFor('hot-prefix', sets, 'server-dies').config, 1);
    expect(held!.record[R.PREEMPTIONS]).toBeGreaterThan(10);
    expect(held!.record[R.RECOMPUTED_TOKENS]).toBeGreaterThan(0);
  });

  it('holds a call\'s KV on its prefill replica until its first token and on its decode replica from its transfer, through a reset', () => {
    const sets = ['traffic.duration=6s', 'traffic.warmup=2s', 'gpu.replicas=6', 'gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=131072', 'gpu.slots=16', 'router.policy=least-loaded', 'workload.output=200'];
    const [held] = expectCounted(configFor('hot-prefix', sets, 'server-dies').config, 1);
    expect(held!.record[R.TRANSFERS]).toBeGreaterThan(100);
    const incremental = [...sets, 'gpu.kv=incremental', 'gpu.kvTokens=20000'];
    const [grown] = expectCounted(configFor('hot-prefix', incremental, 'server-dies').config, 1);
    expect(grown!.record[R.TRANSFERS]).toBeGreaterThan(100);
    expect(grown!.record[R.PREEMPTIONS]).toBeGreaterThan(0);
    // decode replicas of their own KV size, slots and profile: each within its own KV
    const own = [...incremental, 'gpu.disaggregation.decode.kvTokens=26000', 'gpu.disaggregation.decode.slots=24', 'gpu.disaggregation.decode.profile=70b-h100'];
    const [apart] = expectCounted(configFor('hot-prefix', own, 'server-dies').config, 1);
    expect(apart!.record[R.TRANSFERS]).toBeGreaterThan(100);
  });

  /** The as-given row of `name` with `sets`, over 4 seeds of the reference engine. */
  const summaryOf = (name: string, sets: string[]) => {
    const { problem, config } = configFor(name, sets);
    const records = runReference(config, 7, 0, 4);
    const results = Array.from({ length: 4 }, (_, i) => decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords)));
    return summarize('as-given', problem.goals, problem.confidence, results, config.params[P.TIMEOUT]!, configurationCost(problem));
  };

  it('names a GPU whose memory binds before its slots by its KV, and one whose slots bind by its batches', () => {
    const row = (sets: string[]) => summaryOf('small-kv-cache', ['traffic.duration=10s', 'traffic.warmup=5s', ...sets]);
    // six 16,000-token prefixes over replicas of 80,000 tokens and 4 slots: the slots fill first
    const slots = row([]);
    expect(slots.kv_in_use).toBeLessThan(slots.batch_occupancy);
    expect(busiestComponent(slots)?.measure).toBe('batch');
    // 16 slots: the sequences of three prefixes fill the memory while most slots stay empty
    const memory = row(['gpu.slots=16']);
    expect(memory.batch_occupancy).toBeLessThan(0.5);
    expect(memory.kv_in_use).toBeGreaterThan(memory.batch_occupancy);
    expect(memory.kv_in_use_peak).toBeGreaterThan(memory.kv_in_use);
    expect(memory.kv_in_use_peak).toBeLessThanOrEqual(1);
    expect(busiestComponent(memory)?.measure).toBe('kv');
  });

  it("judges a GPU split into prefill and decode pools by its fuller pool's batches, not their average", () => {
    const split = summaryOf('long-prompts', ['gpu.disaggregation.prefill=3', 'traffic.duration=10s', 'traffic.warmup=10s']);
    expect(split.decode_batch_occupancy).toBeGreaterThan(split.batch_occupancy);
    expect(split.decode_batch_occupancy).toBeGreaterThan(split.prefill_batch_occupancy);
    expect(busiestComponent(split)).toEqual({ component: 'gpu', load: split.decode_batch_occupancy, measure: 'batch' });
  });
});
