/** Small Mooncake-format traces made in a test, and problems that replay them. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, type EngineConfig } from '../src/engine/compile.js';
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

