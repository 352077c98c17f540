/**
 * gpu.kv incremental (docs/model.md section 3): a running sequence takes KV for its uncached
 * prompt and first token when admitted and a token each step it decodes; when the next step
 * finds no room, cached entries are evicted and then the most recently admitted sequence is
 * preempted, back at the head of the queue, to recompute its prompt and what it had generated.
 */
import { describe, expect, it } from 'vitest';
import { R } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { configFor } from './support.js';
import { line, recordedCalls as run, traceProblem, wholeWindow, wide } from './trace-support.js';

describe('gpu.kv incremental', () => {
  it("gives reserve's records where KV never binds, but for the KV in use, which grows as tokens do", () => {
    const sets = ['traffic.duration=8s', 'traffic.warmup=4s'];
    const reserve = runReference(configFor('hot-prefix', sets, 'server-dies').config, 7, 0, 3);
    const { config } = configFor('hot-prefix', [...sets, 'gpu.kv=incremental'], 'server-dies');
    const incremental = runReference(config, 7, 0, 3);
    const kvFields = new Set([R.KV_AREA, R.KV_AREA_HI, R.KV_PEAK]);
    let lessHeld = 0;
    for (let i = 0; i < 3; i++) {
      const at = i * config.resultWords;
      for (let w = 0; w < config.resultWords; w++) {
        if (!kvFields.has(w)) expect(incremental[at + w], `instance ${i} word ${w}`).toBe(reserve[at + w]);
      }
      expect(incremental[at + R.PREEMPTIONS]).toBe(0);
      if (wide(incremental, at + R.KV_AREA) < wide(reserve, at + R.KV_AREA)) lessHeld++;
    }
    expect(lessHeld).toBe(3);
  });

  it('gives the same records advanced in 1 and 7 time windows, through preemptions and a reset', () => {
    const sets = ['gpu.kv=incremental', 'gpu.kvTokens=20000', 'gpu.slots=16', 'router.policy=least-loaded', 'workload.output=200', 'traffic.duration=6s', 'traffic.warmup=2s'];
    const { config } = configFor('hot-prefix', sets, 'server-dies');
    const whole = runReference(config, 7, 0, 2);
    expect(runReference(config, 7, 0, 2, 7)).toEqual(whole);
    expect(whole[R.PREEMPTIONS]).toBeGreaterThan(10);
  });

  // Two requests of 1,014 prompt tokens and 300 output tokens on one replica of 2,300 tokens:
  // both prompts fit, both outputs do not
  // (after one small request in the warm-up, which fixes the window's start; then ten, a second
  // apart, once both have ended: a trace's window needs ten)
  const small = (k: number) => ({ timestamp: k * 1000, input_length: 100, output_length: 3, hash_ids: [900 + k] });
  const lines = [small(0), line(1, [1, 2], 300), line(1.001, [3, 4], 300), ...Array.from({ length: 10 }, (_, k) => small(10 + k))];
  const story = (kv: string) => run(traceProblem(`kv-${kv}`, lines, wholeWindow(lines), `replicas: 1, slots: 8, kvTokens: 2300, kv: ${kv}`).config);

  it('admits the second request at once, preempts it when KV runs out and resumes it after the first, recomputing it', () => {
    const { record, calls } = story('incremental');
    const [first, second] = calls;
    expect(first!.preemptions).toBe(0);
    expect(second!.preemptions).toBe(1);
    expect(record[R.PREEMPTIONS]).toBe(1);
    // its first token came before it was preempted, and it ended after the first request
    expect(second!.firstAt).toBeLessThan(first!.end);
    expect(second!.end).toBeGreaterThan(first!.end);
    // By hand: each takes 1,015 (its prompt and first token) when admitted, the second at the
    // step that ends the first's prefill; the first decodes a token in the second's prefill step:
    // 2,031 in use, 269 free, a run of 134 steps of 2 tokens leaves 1 for the next step's 2, and no
    // entry is unpinned (each pins its first block). The second, preempted with 1 + 134 tokens
    // generated, finds its first block still cached when it resumes: 502 + 135 computed again.
    expect(second!.cached).toBe(512);
    expect(wide(record, R.RECOMPUTED_TOKENS)).toBe(1014 - 512 + 135);
  });

  it('makes the second request wait for the first under reserve, which never preempts', () => {
    const incremental = story('incremental').calls;
    const { record, calls } = story('reserve');
    const [first, second] = calls;
    expect(record[R.PREEMPTIONS]).toBe(0);
    expect(wide(record, R.RECOMPUTED_TOKENS)).toBe(0);
    expect(second!.preemptions).toBe(0);
    expect(second!.firstAt).toBeGreaterThan(first!.end);
    // incremental: the second's first token far sooner, the first's end a little later (it
    // shared its steps until the preemption)
    expect(incremental[1]!.firstAt).toBeLessThan(second!.firstAt - 2_000_000);
    expect(incremental[0]!.end).toBeGreaterThan(first!.end);
    expect(incremental[0]!.end).toBeLessThan(first!.end * 1.05);
  });
});
