// A replayed trace (issue 16 section 3, docs/model.md sections 1-2) in the reference engine:
// each seed replays a window of its own, the trace's times set the arrivals (rateScale
// compresses them), and the KV cache's hits follow the requests' shared hash_ids.
import { describe, expect, it } from 'vitest';
import { runReference } from '../src/engine/reference.js';
import { decodeAll } from './support.js';
import { conversations, traceProblem, type Line } from './trace-support.js';

/**
 * Prompt tokens each request finds cached under its parent, by brute force: the deepest (then
 * latest) earlier request whose full blocks are all a prefix of its prompt.
 */
function sharedByHand(lines: readonly Line[]): number[] {
  return lines.map((line, i) => {
    let best = -1;
    let depth = 0;
    for (let k = 0; k < i; k++) {
      const full = Math.min(lines[k]!.hash_ids.length, Math.floor(lines[k]!.input_length / 512));
      const prefix = full > 0 && full <= line.hash_ids.length && lines[k]!.hash_ids.slice(0, full).every((id, b) => id === line.hash_ids[b]);
      if (prefix && full >= depth) {
        best = k;
        depth = full;
      }
    }
    return best < 0 ? 0 : Math.min(depth * 512, line.input_length, lines[best]!.input_length);
  });
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

  it('finds cached exactly the prefix each request shares with its parent, by hash_ids', () => {
    const lines = conversations(40);
    // the window is the whole trace, so every seed starts at its first request
    const { config } = traceProblem('shared', lines, 'duration: 35s, warmup: 4s');
    const shared = sharedByHand(lines);
    // measured: the requests at 4 s .. 38 s; at least one prompt token is always computed
    const expected = lines.slice(4, 39).reduce((s, line, k) => s + Math.min(shared[k + 4]!, line.input_length - 1), 0);
    expect(expected).toBeGreaterThan(0);
    for (const r of decodeAll(config, runReference(config, 1, 0, 3))) {
      expect(r.arrivals).toBe(35);
      expect(r.cachedTokens).toBe(expected);
    }
    const { config: unshared } = traceProblem('unshared', conversations(40, true), 'duration: 35s, warmup: 4s');
    for (const r of decodeAll(unshared, runReference(unshared, 1, 0, 3))) expect(r.cachedTokens).toBe(0);
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
