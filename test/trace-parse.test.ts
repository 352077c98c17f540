import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { affinityKey, describeTraceSummary, traceSpan, traceSummary, type Trace } from '../src/model/trace.js';
import { loadTrace, parseAzureTimestamp, parseTrace, traceFormatOf } from '../src/problem/trace.js';
import { thrown } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'servesim-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const jsonl = (rows: readonly object[]): string => rows.map((r) => JSON.stringify(r)).join('\n');

/**
 * Full blocks (input / 512, at most the ids given): request 1 has [1], request 2 [1, 2, 3],
 * request 3 [1, 2, 3], request 4 [1], request 5 [1, 2, 3, 5, 6] (its last id is the partial
 * block). The radix tree: [1] (requests 1 and 4 end there), under it [2, 3] (requests 2 and 3),
 * under that [5, 6] (request 5).
 */
const FIVE = jsonl([
  { timestamp: 0, input_length: 1000, output_length: 10, hash_ids: [1, 2] },
  { timestamp: 5, input_length: 2000, output_length: 20, hash_ids: [1, 2, 3, 4] },
  { timestamp: 10, input_length: 1600, output_length: 30, hash_ids: [1, 2, 3, 5], extra: 'ignored' },
  { timestamp: 10, input_length: 700, output_length: 40, hash_ids: [1, 2, 8] },
  { timestamp: 20.5, input_length: 3000, output_length: 50, hash_ids: [1, 2, 3, 5, 6, 7] },
]);

/** A Mooncake trace of whole-block prompts (input = blocks x 512), one request a millisecond. */
function blocks(prompts: readonly (readonly number[])[]): Trace {
  const rows = prompts.map((ids, i) => ({ timestamp: i, input_length: Math.max(1, ids.length * 512), output_length: 1, hash_ids: ids }));
  return parseTrace(jsonl(rows), 'b.jsonl', 'mooncake');
}

/** The tree as plain arrays, for toEqual. */
function tree(t: Trace): { parent: number[]; end: number[]; tokens: number[]; depth: number[] } {
  return { parent: Array.from(t.tree.parent), end: Array.from(t.tree.end), tokens: Array.from(t.tree.tokens), depth: Array.from(t.tree.depth) };
}

describe('a Mooncake trace', () => {
  const t = parseTrace(`${FIVE}\n\n`, 'five.jsonl', 'mooncake');

  it('gives each request its arrival in microseconds after the first, its prompt and its output', () => {
    expect(t.file).toBe('five.jsonl');
    expect(t.format).toBe('mooncake');
    expect(t.requests).toBe(5);
    expect(Array.from(t.at)).toEqual([0, 5_000, 10_000, 10_000, 20_500]);
    expect(Array.from(t.input)).toEqual([1000, 2000, 1600, 700, 3000]);
    expect(Array.from(t.output)).toEqual([10, 20, 30, 40, 50]);
    expect(traceSpan(t)).toBe(20_500);
  });

  it('keeps every hash id of each request, the partial block included', () => {
    expect(Array.from(t.idsStart)).toEqual([0, 2, 6, 10, 13, 19]);
    expect(Array.from(t.ids)).toEqual([1, 2, 1, 2, 3, 4, 1, 2, 3, 5, 1, 2, 8, 1, 2, 3, 5, 6, 7]);
  });

  it('builds the radix tree of the full blocks, split where a request ends', () => {
    expect(t.tree.nodes).toBe(3);
    expect(tree(t)).toEqual({ parent: [-1, 0, 1], end: [3, 3, 3], tokens: [512, 1024, 1024], depth: [512, 1536, 2560] });
    expect(Array.from(t.node)).toEqual([0, 1, 1, 0, 2]);
  });

  it('finds in an infinite block cache the leading full blocks an earlier request began with, less one token', () => {
    expect(Array.from(t.reusable)).toEqual([0, 512, 1536, 512, 1536]);
    // a prompt of whole blocks found whole still computes its last token
    expect(Array.from(blocks([[1, 2], [1, 2]]).reusable)).toEqual([0, 1023]);
  });

  it('splits a node where two prompts diverge in the middle of a shared run', () => {
    const d = blocks([[1, 2, 3, 4], [1, 2, 7]]);
    // preorder: [1, 2], then [3, 4], then [7]
    expect(tree(d)).toEqual({ parent: [-1, 0, 0], end: [3, 2, 3], tokens: [1024, 1024, 512], depth: [1024, 2048, 1536] });
    expect(Array.from(d.node)).toEqual([1, 2]);
    expect(Array.from(d.reusable)).toEqual([0, 1024]);
  });

  it("splits a node where a request ends inside another's run, whichever comes first", () => {
    for (const prompts of [[[1, 2, 3, 4], [1, 2]], [[1, 2], [1, 2, 3, 4]]]) {
      const e = blocks(prompts);
      expect(tree(e)).toEqual({ parent: [-1, 0], end: [2, 2], tokens: [1024, 1024], depth: [1024, 2048] });
      expect(Array.from(e.node)).toEqual(prompts[0]!.length === 4 ? [1, 0] : [0, 1]);
    }
    // without the request ending there, one run stays one node
    expect(tree(blocks([[1, 2, 3, 4]]))).toEqual({ parent: [-1], end: [1], tokens: [2048], depth: [2048] });
  });

  it('hangs siblings from their common node, in the order they were first seen', () => {
    const f = blocks([[9, 5, 6], [9, 3], [8], [9, 1, 2, 4]]);
    // [9] with [5, 6], [3], [1, 2, 4] under it, then [8]
    expect(tree(f)).toEqual({ parent: [-1, 0, 0, 0, -1], end: [4, 2, 3, 4, 5], tokens: [512, 1024, 512, 1536, 512], depth: [512, 1536, 1024, 2048, 512] });
    expect(Array.from(f.node)).toEqual([1, 2, 4, 3]);
  });

  it('takes a line without hash_ids (or null) as a prompt of its own', () => {
    const g = parseTrace(
      jsonl([
        { timestamp: 0, input_length: 2000, output_length: 1, hash_ids: [1, 2, 3] },
        { timestamp: 1, input_length: 2000, output_length: 1 },
        { timestamp: 2, input_length: 2000, output_length: 1, hash_ids: null },
        { timestamp: 3, input_length: 2000, output_length: 1, hash_ids: [1, 2, 3] },
      ]),
      'g.jsonl',
      'mooncake',
    );
    expect(Array.from(g.node)).toEqual([0, -1, -1, 0]);
    expect(Array.from(g.idsStart)).toEqual([0, 3, 3, 3, 6]);
    expect(Array.from(g.reusable)).toEqual([0, 0, 0, 1536]);
    expect(affinityKey(g, 1, 4)).toBe(0);
    expect(affinityKey(g, 3, 2)).toBe(affinityKey(g, 0, 2));
    expect(affinityKey(g, 0, 2)).not.toBe(0);
    // a prompt shorter than a block has no full block: no node, nothing reusable
    const short = parseTrace(jsonl([0, 1].map((i) => ({ timestamp: i, input_length: 100, output_length: 1, hash_ids: [7] }))), 's.jsonl', 'mooncake');
    expect(Array.from(short.node)).toEqual([-1, -1]);
    expect(Array.from(short.reusable)).toEqual([0, 0]);
    expect(short.tree.nodes).toBe(0);
  });

  it('matches a brute-force reading of a random trace: reusable, nodes, depths and common prefixes', () => {
    let seed = 12345;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    // each prompt continues a part of an earlier one (a conversation) or starts afresh
    const prompts: number[][] = [];
    const inputs: number[] = [];
    for (let i = 0; i < 300; i++) {
      const base = i > 0 && random(4) > 0 ? prompts[random(i)]! : [];
      const ids = [...base.slice(0, random(base.length + 1)), ...Array.from({ length: random(5) }, () => random(6))];
      prompts.push(ids);
      // whole blocks, a partial last one, or fewer full blocks than ids
      inputs.push(Math.max(1, ids.length * 512 - [0, 100, 700][random(3)]!));
    }
    const rows = prompts.map((ids, i) => ({ timestamp: i, input_length: inputs[i]!, output_length: 1, hash_ids: ids }));
    const r = parseTrace(jsonl(rows), 'r.jsonl', 'mooncake');
    const full = prompts.map((ids, i) => ids.slice(0, Math.floor(inputs[i]! / 512)));
    const common = (a: readonly number[], b: readonly number[]): number => {
      let k = 0;
      while (k < a.length && k < b.length && a[k] === b[k]) k++;
      return k;
    };
    const { parent, end, depth } = r.tree;
    const ending = new Set(Array.from(r.node));
    const children = new Array<number>(r.tree.nodes).fill(0);
    for (let u = 0; u < r.tree.nodes; u++) if (parent[u]! >= 0) children[parent[u]!]!++;
    for (let u = 0; u < r.tree.nodes; u++) {
      // no node could be merged into its one child
      expect(ending.has(u) || children[u]! >= 2).toBe(true);
    }
    for (let i = 0; i < r.requests; i++) {
      let best = 0;
      for (let j = 0; j < i; j++) best = Math.max(best, common(full[i]!, full[j]!));
      expect(r.reusable[i]).toBe(Math.min(best * 512, inputs[i]! - 1));
      expect(r.node[i]! < 0 ? 0 : depth[r.node[i]!]).toBe(full[i]!.length * 512);
    }
    // two prompts share as many blocks as their deepest common node holds
    const wrong: string[] = [];
    for (let i = 0; i < r.requests; i++) {
      for (let j = 0; j < i; j++) {
        let u = r.node[i]!;
        const v = r.node[j]!;
        while (u >= 0 && !(v >= u && v < end[u]!)) u = parent[u]!;
        if ((u < 0 ? 0 : depth[u]!) !== common(full[i]!, full[j]!) * 512) wrong.push(`${j}, ${i}`);
      }
    }
    expect(wrong).toEqual([]);
    // the trace exercises what it should: sharing, branching, prompts without a full block
    expect(Array.from(r.reusable).filter((x) => x > 0).length).toBeGreaterThan(100);
    expect(children.filter((c) => c >= 2).length).toBeGreaterThan(10);
    expect(Array.from(r.node).filter((x) => x < 0).length).toBeGreaterThan(0);
    expect(r.tree.nodes).toBeGreaterThan(50);
  });

  it('sums up as the user sees it on load', () => {
    const s = traceSummary(t);
    expect(s).toEqual({
      file: 'five.jsonl',
      format: 'mooncake',
      requests: 5,
      spanSeconds: 0.0205,
      meanRate: 4 / 0.0205,
      meanInputTokens: 8300 / 5,
      meanOutputTokens: 30,
      blockCacheShare: 4096 / 8300,
    });
    expect(describeTraceSummary(s)).toBe(
      'five.jsonl: 5 requests over 0 s (195.12/s), 1,660 input and 30 output tokens on average, 49.3% of prompt tokens found by an infinite block cache',
    );
  });
});

describe('an Azure trace', () => {
  const CSV = [
    'TIMESTAMP,ContextTokens,GeneratedTokens',
    '2023-11-16 18:15:46.6805900,4808,10',
    '2023-11-16 18:15:50.9951690,3180,8',
    '2023-11-16 18:16:00.0000004,110,27',
    '',
  ].join('\r\n');

  it('gives arrivals in whole microseconds after the first row, prompts and outputs, and no prefixes', () => {
    const t = parseTrace(CSV, 'az.csv', 'azure');
    expect(t.format).toBe('azure');
    expect(t.requests).toBe(3);
    expect(Array.from(t.at)).toEqual([0, 4_314_579, 13_319_410]);
    expect(Array.from(t.input)).toEqual([4808, 3180, 110]);
    expect(Array.from(t.output)).toEqual([10, 8, 27]);
    expect(Array.from(t.node)).toEqual([-1, -1, -1]);
    expect(Array.from(t.reusable)).toEqual([0, 0, 0]);
    expect(Array.from(t.idsStart)).toEqual([0, 0, 0, 0]);
    expect(t.ids).toHaveLength(0);
    expect(t.tree.nodes).toBe(0);
    expect(traceSummary(t).blockCacheShare).toBe(0);
  });

  it('takes the column order from the header and ignores other columns', () => {
    const t = parseTrace('Model,ContextTokens,TIMESTAMP,GeneratedTokens\nm,5,2023-11-16 23:59:59.9999990,6\nm,7,2023-11-17 00:00:00.0000010,8\n', 'az.csv', 'azure');
    expect(Array.from(t.at)).toEqual([0, 2]);
    expect(Array.from(t.input)).toEqual([5, 7]);
    expect(Array.from(t.output)).toEqual([6, 8]);
  });

  it('reads a timestamp exactly, as UTC, whole microseconds since 1970', () => {
    expect(parseAzureTimestamp('2023-11-16 18:15:46.6805900')).toBe(Date.UTC(2023, 10, 16, 18, 15, 46) * 1000 + 680_590);
    expect(parseAzureTimestamp('2024-02-29 00:00:00')).toBe(Date.UTC(2024, 1, 29) * 1000);
    expect(parseAzureTimestamp('2023-02-29 00:00:00')).toBeUndefined();
    expect(parseAzureTimestamp('16/11/2023 18:15')).toBeUndefined();
  });

  it('reads years 0000-0099 as written, not as 1900-1999', () => {
    expect(parseAzureTimestamp('0050-03-01 12:00:00')).toBe(Date.parse('0050-03-01T12:00:00Z') * 1000);
    expect(parseAzureTimestamp('0000-02-29 00:00:00')).toBe(Date.parse('0000-02-29T00:00:00Z') * 1000);
    expect(parseAzureTimestamp('0099-12-31 23:59:59')).toBe(Date.parse('0099-12-31T23:59:59Z') * 1000);
  });
});

describe('trace errors name the file, the line, the field and the reason', () => {
  const good = { timestamp: 0, input_length: 10, output_length: 1, hash_ids: [0] };
  const mooncake = (lines: readonly string[]): ServesimError => thrown(() => parseTrace(lines.join('\n'), 'traces/x.jsonl', 'mooncake'));

  it('a line that is not JSON', () => {
    const err = mooncake([JSON.stringify(good), '{"timestamp": 1,']);
    expect(err.code).toBe('SERVESIM_PROBLEM_INVALID');
    expect(err.path).toBe('traffic.trace');
    expect(err.message).toMatch(/^traffic\.trace: traces\/x\.jsonl line 2: not JSON/);
  });

  it('a missing field', () => {
    const { output_length: _, ...missing } = good;
    expect(mooncake([JSON.stringify(good), JSON.stringify(good), JSON.stringify(missing)]).message).toBe(
      'traffic.trace: traces/x.jsonl line 3: output_length must be a whole number of at least 1 (got nothing)',
    );
  });

  it('a negative count', () => {
    expect(mooncake(['', JSON.stringify({ ...good, output_length: -3 })]).message).toBe(
      'traffic.trace: traces/x.jsonl line 2: output_length must be a whole number of at least 1 (got -3)',
    );
    expect(mooncake([JSON.stringify({ ...good, hash_ids: [0, -1] })]).message).toMatch(/line 1: hash_ids\[1\] must be a whole number from 0/);
    expect(mooncake([JSON.stringify({ ...good, hash_ids: 'x' })]).message).toMatch(/line 1: hash_ids must be a list of block ids, or left out \(got "x"\)/);
    expect(mooncake([JSON.stringify({ ...good, hash_ids: [1.5] })]).message).toMatch(/line 1: hash_ids\[0\] must be a whole number/);
    expect(mooncake([JSON.stringify({ ...good, hash_ids: [0xffff_ffff] })]).message).toMatch(/line 1: hash_ids\[0\] must be a whole number from 0 to 4294967294/);
    expect(mooncake([JSON.stringify({ ...good, timestamp: -1 })]).message).toMatch(/line 1: timestamp must be milliseconds .* \(got -1\)/);
  });

  it('a request before the previous one', () => {
    const err = mooncake([JSON.stringify({ ...good, timestamp: 5 }), JSON.stringify({ ...good, timestamp: 4 })]);
    expect(err.message).toMatch(/traces\/x\.jsonl line 2: timestamp 4 is before the previous request's \(5\)/);
    const az = thrown(() => parseTrace('TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,1,1\n2023-11-16 18:15:46.0,1,1', 'a.csv', 'azure'));
    expect(az.message).toMatch(/a\.csv line 3: TIMESTAMP 2023-11-16 18:15:46\.0 is before/);
  });

  it('a CSV header without a column', () => {
    const err = thrown(() => parseTrace('TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.1,1', 'a.csv', 'azure'));
    expect(err.message).toMatch(/^traffic\.trace: a\.csv line 1: the header has no column GeneratedTokens/);
  });

  it('a bad CSV value', () => {
    const err = thrown(() => parseTrace('TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,1,0', 'a.csv', 'azure'));
    expect(err.message).toBe('traffic.trace: a.csv line 2: GeneratedTokens must be a whole number of at least 1 (got 0)');
  });

  it('an empty trace', () => {
    expect(mooncake(['', '']).message).toMatch(/traces\/x\.jsonl: the trace is empty/);
    expect(thrown(() => parseTrace('TIMESTAMP,ContextTokens,GeneratedTokens\n', 'a.csv', 'azure')).message).toMatch(/a\.csv: the trace is empty/);
  });

  it('a file that cannot be read, or of no known format', () => {
    const err = thrown(() => loadTrace(join(dir, 'missing.jsonl'), 'missing.jsonl'));
    expect(err.code).toBe('SERVESIM_FILE_UNREADABLE');
    expect(err.message).toBe('traffic.trace: cannot read trace file missing.jsonl: no such file');
    expect(thrown(() => loadTrace(join(dir, 'x.txt'), 'x.txt')).message).toMatch(/x\.txt: must name a \.jsonl file .* or a \.csv file/);
    expect(traceFormatOf('A.CSV')).toBe('azure');
  });
});

describe('loadTrace', () => {
  it('parses a file once while its path, size and modification time stay the same', () => {
    const path = join(dir, 'memo.jsonl');
    writeFileSync(path, FIVE);
    const first = loadTrace(path, 'memo.jsonl');
    expect(loadTrace(path, 'memo.jsonl')).toBe(first);
    // another name for the same file shares the parsed arrays
    const renamed = loadTrace(path, './memo.jsonl');
    expect(renamed.file).toBe('./memo.jsonl');
    expect(renamed.at).toBe(first.at);
    // touched: parsed again
    utimesSync(path, new Date(), new Date(Date.now() + 5_000));
    const touched = loadTrace(path, 'memo.jsonl');
    expect(touched).not.toBe(first);
    expect(Array.from(touched.node)).toEqual(Array.from(first.node));
    // changed: parsed again, with the new contents
    writeFileSync(path, jsonl([{ timestamp: 0, input_length: 1, output_length: 1, hash_ids: [] }]));
    expect(loadTrace(path, 'memo.jsonl').requests).toBe(1);
  });
});
