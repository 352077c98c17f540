// A replayed trace (issue 16 section 3, docs/model.md sections 1-2) in the reference engine:
// each seed replays a window of its own, the trace's times set the arrivals (rateScale
// compresses them), and the KV cache's hits follow the requests' shared hash_ids.
import { describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { runReference } from '../src/engine/reference.js';
import { problemFromObject, selectCases } from '../src/problem/parse.js';
import { decodeAll } from './support.js';
import { CACHE_STORIES, conversations, line, traceProblem, wholeWindow, type Line } from './trace-support.js';

/** A request's full blocks: the hash ids of its first floor(input / 512) tokens' blocks. */
function fullBlocks(line: Line): readonly number[] {
  return line.hash_ids.slice(0, Math.floor(line.input_length / 512));
}

/**
 * The block-prefix bound, by brute force: for each request, the longest run of leading full
 * blocks that an earlier request of the trace also began with, x 512, less the one prompt token
 * always computed. A block cache with room for everything on one replica finds exactly this.
 */
function blockBound(lines: readonly Line[]): number[] {
  return lines.map((line, i) => {
    const mine = fullBlocks(line);
    let run = 0;
    for (let k = 0; k < i; k++) {
      const theirs = fullBlocks(lines[k]!);
      let n = 0;
      while (n < mine.length && n < theirs.length && mine[n] === theirs[n]) n++;
      run = Math.max(run, n);
    }
    return Math.min(run * 512, line.input_length - 1);
  });
}

/** The prompt tokens each seed found cached, replaying `lines` whole (the window starts at the first). */
function cachedOf(name: string, lines: readonly Line[], gpu?: string): number[] {
  const { config } = traceProblem(name, lines, wholeWindow(lines), gpu);
  return decodeAll(config, runReference(config, 1, 0, 2)).map((r) => r.cachedTokens);
}

describe('a replayed trace', () => {
  it('replays a window of its own per seed, each request arriving at its recorded time', () => {
    // 400 requests 100 ms apart, each prompt one token longer than the last: a window's prompt
    // tokens say where it started
    const lines = Array.from({ length: 400 }, (_, i) => ({ timestamp: i * 100, input_length: 100 + i, output_length: 2, hash_ids: [5_000 + i] }));
    const { config } = traceProblem('windows', lines, 'duration: 5s, warmup: 1s');
    const results = decodeAll(config, runReference(config, 7, 0, 16));
    const starts = results.map((r) => {
      // 50 measured arrivals, rows start + 10 .. start + 59: their prompts sum to 50 x (100 + start) + 1725
      expect(r.arrivals).toBe(50);
      expect(r.successes).toBe(50);
      return (r.promptTokens - 1725) / 50 - 100;
    });
    for (const s of starts) {
      expect(Number.isInteger(s)).toBe(true);
      // a window of 6 s needs 6 s of trace after its start: the last request is at 39.9 s
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(339);
    }
    expect(new Set(starts).size).toBeGreaterThan(8);
  });

  it('replays a trace longer than the u32 clock, a gap of 72 minutes included, and a window never runs past a gap', () => {
    // 2,000 requests 100 ms apart, 72 minutes of nothing, 2,000 more: the windows after the gap
    // start 4,320 s in, past 2^32 us; those that reach the gap see its requests no sooner
    const lines = Array.from({ length: 4_000 }, (_, i) => ({ timestamp: i * 100 + (i < 2_000 ? 0 : 4_320_000), input_length: 100, output_length: 2, hash_ids: [i] }));
    const { config } = traceProblem('gap', lines, 'duration: 25s, warmup: 5s');
    const results = decodeAll(config, runReference(config, 11, 0, 64));
    for (const r of results) {
      expect(r.arrivals).toBeLessThanOrEqual(250);
      expect(r.successes).toBe(r.arrivals);
    }
    expect(results.filter((r) => r.arrivals === 250).length).toBeGreaterThan(0);
    expect(results.filter((r) => r.arrivals < 250).length).toBeGreaterThan(0);
  });

  it('replays the trace rateScale times faster', () => {
    const lines = Array.from({ length: 400 }, (_, i) => ({ timestamp: i * 100, input_length: 100, output_length: 2, hash_ids: [i] }));
    const { config } = traceProblem('faster', lines, 'duration: 5s, warmup: 1s, rateScale: 2.5');
    // 25 arrivals a second
    for (const r of decodeAll(config, runReference(config, 3, 0, 4))) expect(r.arrivals).toBe(125);
  });

  it('finds cached exactly the block-prefix bound with room for everything on one replica', () => {
    // conversations under one system prompt block, some diverging in the middle of their runs,
    // prompts ending on a block boundary or inside a block: every request prefilled before the next
    const lines = Array.from({ length: 60 }, (_, i) => {
      const conversation = i % 5;
      const ids = [0, ...Array.from({ length: 1 + (i % 7) }, (_, b) => 1_000 * (conversation + 1) + b + (b > 2 && i % 2 === 1 ? 500 : 0))];
      return line(i, ids, 3, i % 3 === 0);
    });
    const bound = blockBound(lines);
    // measured: the requests at 4 s .. 58 s (the window, 59 s, starts at the first request)
    const expected = bound.slice(4, 59).reduce((sum, x) => sum + x, 0);
    const { config } = traceProblem('bound', lines, 'duration: 55s, warmup: 4s');
    for (const r of decodeAll(config, runReference(config, 1, 0, 3))) {
      expect(r.arrivals).toBe(55);
      expect(r.cachedTokens).toBe(expected);
    }
    expect(expected).toBeGreaterThan(0);
    const { config: unshared } = traceProblem('unshared', conversations(40, true), 'duration: 35s, warmup: 4s');
    for (const r of decodeAll(unshared, runReference(unshared, 1, 0, 3))) expect(r.cachedTokens).toBe(0);
  });

  // sibling sharing, divergence in the middle of a run, leaves evicted before their prefixes,
  // blocks pinned by a running sequence (trace-support.ts says each story; gpu-batch.test.ts
  // runs them on the kernel, equal to these records)
  for (const [name, story] of Object.entries(CACHE_STORIES)) {
    it(story.title, () => {
      for (const cached of cachedOf(name, story.lines, story.gpu)) expect(cached).toBe(story.cached);
    });
  }

  it('hits a shared system prompt under least-loaded routing as the same workload written as a Poisson problem does', () => {
    // 40 requests a second, each a 4,096-token system prompt (ids 0-7) and 2,000 tokens of its own
    const trace = Array.from({ length: 800 }, (_, i) => ({
      timestamp: i * 25,
      input_length: 4_096 + 2_000,
      output_length: 50,
      hash_ids: [0, 1, 2, 3, 4, 5, 6, 7, ...Array.from({ length: 4 }, (_, b) => 10_000 + 4 * i + b)],
    }));
    const gpu = 'replicas: 8, slots: 16, kvTokens: 400000';
    const { config } = traceProblem('system', trace, 'duration: 10s, warmup: 2s', gpu, 'least-loaded');
    const traced = decodeAll(config, runReference(config, 1, 0, 4));
    const poisson = problemFromObject({
      id: 'system-poisson',
      goals: { success: 0.9, p99: '30s' },
      traffic: { rate: 40, duration: '10s', warmup: '2s' },
      workload: { kind: 'request', share: 1, prefixes: [{ tokens: 4_096 }], suffix: 2_000, output: 50 },
      lb: { overhead: '1ms' },
      app: { replicas: 1, slots: 1_000, timeout: '60s', overhead: '1ms' },
      router: { policy: 'least-loaded', slots: 1_000, overhead: '1ms' },
      gpu: { replicas: 8, slots: 16, kvTokens: 400_000, profile: '8b-h100' },
      cases: ['as-given'],
    });
    const pconfig = compile(poisson, selectCases(poisson, ['as-given'])[0]!);
    const rate = (rs: readonly { cachedTokens: number; promptTokens: number }[]) => rs.reduce((s, r) => s + r.cachedTokens, 0) / rs.reduce((s, r) => s + r.promptTokens, 0);
    const tracedRate = rate(traced);
    const poissonRate = rate(decodeAll(pconfig, runReference(pconfig, 1, 0, 4)));
    expect(tracedRate).toBeGreaterThan(0.6);
    expect(Math.abs(tracedRate - poissonRate)).toBeLessThan(0.03);
  });

  it('evicts leaves under cache pressure and still resolves every arrival once', () => {
    // 2 replicas of a few prompts' KV each, a conversation's turns on one: entries are evicted,
    // a parent never before its children
    const lines = conversations(400).map((l, i) => ({ ...l, timestamp: i * 100 }));
    const { config } = traceProblem('pressure', lines, 'duration: 20s, warmup: 5s', 'replicas: 2, slots: 4, kvTokens: 6000', 'prefix-affinity');
    for (const r of decodeAll(config, runReference(config, 5, 0, 8))) {
      expect(r.overload).toBe('');
      expect(r.successes + r.rejected + r.timedOut + r.died + r.overloaded).toBe(r.arrivals);
      expect(r.cachedTokens).toBeGreaterThan(0);
      expect(r.cachedTokens).toBeLessThan(r.promptTokens);
    }
  });
});
