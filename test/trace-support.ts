/** Small Mooncake-format traces made in a test, and problems that replay them. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { runReference } from '../src/engine/reference.js';
import type { RequestRecorder } from '../src/engine/simulate.js';
import type { Problem } from '../src/model/problem.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';

export interface Line {
  readonly timestamp: number;
  readonly input_length: number;
  readonly output_length: number;
  readonly hash_ids: readonly number[];
}

let dir: string | undefined;

/** A problem replaying `lines` (written as a Mooncake trace beside it) on one or more replicas. */
export function traceProblem(name: string, lines: readonly Line[], traffic: string, gpu = 'replicas: 1, slots: 8, kvTokens: 400000', policy = 'round-robin'): { problem: Problem; config: EngineConfig } {
  dir ??= mkdtempSync(join(tmpdir(), 'servesim-trace-'));
  writeFileSync(join(dir, `${name}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  writeFileSync(join(dir, `${name}.yaml`), `
id: ${name}
title: A small trace
goals: { success: 0.9, p99: 30s }
traffic: { trace: ${name}.jsonl, ${traffic} }
workload: { kind: request }
lb: { overhead: 1ms }
app: { replicas: 1, slots: 1000, timeout: 60s, overhead: 1ms }
router: { policy: ${policy}, slots: 1000, overhead: 1ms }
gpu: { ${gpu}, profile: 8b-h100 }
cases: [as-given]
`);
  const problem = loadProblem(join(dir, `${name}.yaml`));
  return { problem, config: compile(problem, selectCases(problem, ['as-given'])[0]!) };
}

/** n requests a second apart whose prompts grow by a block each turn of a 4-turn conversation. */
export function conversations(n: number, distinct = false): Line[] {
  return Array.from({ length: n }, (_, i) => {
    const conversation = Math.floor(i / 4);
    const turn = i % 4;
    const blocks = 2 + turn;
    // block 0 is every request's system prompt; then the conversation's blocks
    const ids = Array.from({ length: blocks }, (_, b) => (distinct ? 1_000 * i + b + 1 : b === 0 ? 0 : 100 * (conversation + 1) + b));
    return { timestamp: i * 1000, input_length: blocks * 512 - 100, output_length: 3, hash_ids: ids };
  });
}

/** A prompt of `ids.length` blocks, its last partial unless `whole`, as a Mooncake line at `seconds`. */
export function line(seconds: number, ids: readonly number[], output = 3, whole = false): Line {
  return { timestamp: seconds * 1000, input_length: ids.length * 512 - (whole ? 0 : 10), output_length: output, hash_ids: ids };
}

/** Requests of no full block with ids of their own, one a second from `from`: they share nothing. */
function filler(from: number, count: number): Line[] {
  return Array.from({ length: count }, (_, k) => ({ timestamp: (from + k) * 1000, input_length: 100, output_length: 3, hash_ids: [900_000 + from + k] }));
}

/** A window of the whole trace: 1 s warm-up, the rest measured, so every seed starts at its first request. */
export function wholeWindow(lines: readonly Line[]): string {
  return `duration: ${lines[lines.length - 1]!.timestamp / 1000 - 1}s, warmup: 1s`;
}

/** A small trace whose measured requests find exactly `cached` prompt tokens on one replica. */
export interface CacheStory {
  readonly title: string;
  readonly lines: readonly Line[];
  readonly gpu?: string;
  readonly cached: number;
}

/** The block cache's rules, each a story (test/trace-replay.test.ts; test/gpu-batch.test.ts on the kernel). */
export const CACHE_STORIES: Readonly<Record<string, CacheStory>> = {
  siblings: {
    title: "finds a sibling's blocks: a prefix shared with an earlier prompt that is not wholly a prefix",
    // [1 2 3] then [1 2 4]: the second finds two blocks, though the first is no prefix of it
    lines: [line(0, [1, 2, 3, 99]), line(1, [1, 2, 4, 98]), ...filler(2, 12)],
    cached: 2 * 512,
  },
  diverge: {
    title: 'splits a run where two prompts diverge in its middle',
    // [1 2 3 4 5] then [1 2 3 9] finds three blocks; then [1 2 3 4 5 6] finds five, under the split
    lines: [line(0, [1, 2, 3, 4, 5, 97]), line(1, [1, 2, 3, 9, 96]), line(2, [1, 2, 3, 4, 5, 6, 95]), ...filler(3, 12)],
    cached: 3 * 512 + 5 * 512,
  },
  evict: {
    title: 'evicts leaves before their prefixes, least recently used first',
    // kvTokens 5,200: [0 1 2] leaves [0] (512 tokens) with the leaf [1 2] under it, then [40 41
    // 42 43] another leaf; [30 31 32 33] needs room for 2,553: one leaf goes, the least recently
    // used, [1 2], and not [0], which is older still but a prefix. So [0 8] and [0 1 2] each find [0]
    lines: [line(0, [0, 1, 2, 90]), line(1, [40, 41, 42, 43, 91]), line(2, [30, 31, 32, 33, 92]), line(3, [0, 8, 93]), line(4, [0, 1, 2, 94]), ...filler(5, 11)],
    gpu: 'replicas: 1, slots: 8, kvTokens: 5200',
    cached: 512 + 512,
  },
  pinned: {
    title: "keeps the blocks a running sequence uses: pressure evicts others' though older ones are pinned",
    // [1 2] decodes 3,000 tokens (about 25 s) with its blocks pinned; [10 11 12] finishes at
    // once; [50 51 52] then needs room: [1 2] is older but pinned, so [10 11 12] goes. [1 2 7]
    // finds [1 2]; [10 11 12] again finds nothing
    lines: [line(0, [1, 2, 80], 3_000), line(1, [10, 11, 12, 81]), line(2, [50, 51, 52, 82]), line(3, [1, 2, 7, 83]), line(4, [10, 11, 12, 84]), ...filler(5, 11)],
    gpu: 'replicas: 1, slots: 8, kvTokens: 7000',
    cached: 2 * 512,
  },
};

/** The evict story's cache (CACHE_STORIES.evict) with an offload tier of `tokens` tokens at `bandwidth`. */
export function offloadGpu(tokens: number, bandwidth = '25GB/s'): string {
  return `replicas: 1, slots: 8, kvTokens: 5200, offload: { tokens: ${tokens}, bandwidth: ${bandwidth}, bytesPerToken: 131072 }`;
}

/**
 * The offload tier's rules on the evict story's requests (CACHE_STORIES.evict): [1 2] (1,024
 * tokens) leaves the cache for the tier at 2 s, [40 41 42 43] (2,048) at 3 s, and [0 1 2] at 4 s
 * finds [0] in the cache and [1 2] under it in the tier. `offloaded`: the tokens the tier gave.
 */
export const OFFLOAD_STORIES: Readonly<Record<string, CacheStory & { readonly offloaded: number }>> = {
  'offload-load': {
    title: 'loads back from the tier what the cache evicted: [0 1 2] finds [0] in the cache and [1 2] under it in the tier',
    lines: CACHE_STORIES.evict!.lines,
    gpu: offloadGpu(4096),
    cached: 512 + 3 * 512,
    offloaded: 2 * 512,
  },
  'offload-lru': {
    title: "evicts the tier's own least recently used entry to make room: [40 41 42 43] pushes [1 2] out of a tier of 2,048 tokens",
    lines: CACHE_STORIES.evict!.lines,
    gpu: offloadGpu(2048),
    cached: 512 + 512,
    offloaded: 0,
  },
  'offload-too-large': {
    title: 'drops an entry larger than the tier: [40 41 42 43] does not fit a tier of 1,024 tokens, and [1 2] stays',
    lines: CACHE_STORIES.evict!.lines,
    gpu: offloadGpu(1024),
    cached: 512 + 3 * 512,
    offloaded: 2 * 512,
  },
};

/** A counted model call as the request recorder hears it. */
export interface RecordedCall {
  readonly index: number;
  readonly callAt: number;
  readonly firstAt: number;
  readonly end: number;
  readonly prompt: number;
  readonly cached: number;
  readonly replica: number;
  readonly preemptions: number;
}

/** Instance 0's record (seed 7, one time window) and its counted model calls, by job index. */
export function recordedCalls(config: EngineConfig): { record: Uint32Array; calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  const recorder: RequestRecorder = {
    waited: () => {},
    called: (index, _step, callAt, firstAt, end, _output, prompt, cached, replica, preemptions) => calls.push({ index, callAt, firstAt, end, prompt, cached, replica, preemptions }),
    resolved: () => {},
  };
  const record = runReference(config, 7, 0, 1, 1, () => recorder);
  return { record, calls: calls.sort((a, b) => a.index - b.index) };
}

/** A two-word result counter (low word first) of a record. */
export function wide(record: Uint32Array, field: number): number {
  return record[field]! + record[field + 1]! * 2 ** 32;
}
