/** What a chunk carries: the sweep kept in Redis, the chunking, and rows that survive JSON. */
import { describe, expect, it } from 'vitest';
import type { CaseSummary } from '../src/model/summary.js';
import {
  chunkIndexes, chunkJobId, decodeSummary, defaultChunkSize, encodeSummary, parseChunkJobId, sweepFromFile, sweepToFile,
} from '../src/queue/chunks.js';
import { sweepFromObject } from '../src/sweep/spec.js';

describe('chunks', () => {
  it('carry every number of a row through JSON exactly, the non-finite ones and -0 included', () => {
    const row = { case: 'as-given', passes: false, p50_ms: Number.POSITIVE_INFINITY, p99_ms: Number.NaN, mean_wait_ms: -0, success: 0.1 + 0.2, requests: 3546 };
    const back = decodeSummary(JSON.parse(JSON.stringify(encodeSummary(row as unknown as CaseSummary)))) as unknown as typeof row;
    expect(back).toEqual(row);
    expect(Object.is(back.mean_wait_ms, -0)).toBe(true);
    expect(back.success).toBe(0.30000000000000004);
  });

  it('keep the sweep as a sweep file that parses back to the same points', () => {
    const sweep = sweepFromObject({
      problem: 'mmc',
      grid: { 'server.slots': [4, 5], 'traffic.rate': { from: 20, to: 21, step: 0.1 }, 'traffic.duration': ['20s', '40s'] },
      seeds: 3,
      seed: 7,
      confidence: 0.8,
    });
    const back = sweepFromFile(JSON.parse(JSON.stringify(sweepToFile(sweep))));
    expect(back.points).toEqual(sweep.points);
    expect(back.axes).toEqual(sweep.axes);
    expect({ id: back.id, title: back.title, cases: back.caseNames, seeds: back.seeds, seed: back.baseSeed, confidence: back.confidence }).toEqual({
      id: sweep.id, title: sweep.title, cases: sweep.caseNames, seeds: 3, seed: 7, confidence: 0.8,
    });
  });

  it('cut a sweep into consecutive points, about 256 instances each but at least 8 chunks', () => {
    const sweep = sweepFromObject({ problem: 'mmc', grid: { 'traffic.rate': { from: 10, to: 39, step: 1 } }, seeds: 16 });
    expect(defaultChunkSize(sweep)).toBe(4); // 30 points / 8 chunks; 256 / 16 would allow 16
    expect(chunkIndexes(sweep, 4).map((c) => c.length)).toEqual([4, 4, 4, 4, 4, 4, 4, 2]);
    expect(chunkIndexes(sweep, 4).flat()).toEqual(sweep.points.map((p) => p.index));
    const big = sweepFromObject({ problem: 'mmc', grid: { 'traffic.rate': { from: 10, to: 39, step: 1 } }, seeds: 200 });
    expect(defaultChunkSize(big)).toBe(2);
  });

  it('name their BullMQ jobs after the service job', () => {
    const id = chunkJobId('0b6c5c1e-58a4-4a5e-9a7e-3f0a3b8c9d10', 12);
    expect(id).not.toContain(':');
    expect(parseChunkJobId(id)).toEqual({ job: '0b6c5c1e-58a4-4a5e-9a7e-3f0a3b8c9d10', chunk: 12 });
    expect(parseChunkJobId('not-a-chunk')).toBe(null);
  });
});
