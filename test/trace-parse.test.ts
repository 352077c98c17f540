import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { traceSpan } from '../src/model/trace.js';
import { loadTrace, parseAzureTimestamp, parseTrace, traceFormatOf } from '../src/problem/trace.js';

const dir = mkdtempSync(join(tmpdir(), 'servesim-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const jsonl = (rows: readonly object[]): string => rows.map((r) => JSON.stringify(r)).join('\n');

/** The error a call throws, for its code and message. */
function thrown(f: () => unknown): ServesimError {
  try {
    f();
  } catch (err) {
    if (err instanceof ServesimError) return err;
    throw err;
  }
  throw new Error('expected a ServesimError');
}

/**
 * Full blocks (input / 512): request 1 has [1], request 2 [1, 2, 3], request 3 [1, 2, 3],
 * request 4 [1], request 5 [1, 2, 3, 5]. A parent's full blocks are all a prefix of its child's
 * prompt: request 2's and 4's is request 1, request 3's is request 2 (three blocks, deeper than
 * request 1's one), request 5's request 3 (the latest of the two with [1, 2, 3]).
 */
const FIVE = jsonl([
  { timestamp: 0, input_length: 1000, output_length: 10, hash_ids: [1, 2] },
  { timestamp: 5, input_length: 2000, output_length: 20, hash_ids: [1, 2, 3, 4] },
  { timestamp: 10, input_length: 1600, output_length: 30, hash_ids: [1, 2, 3, 5], extra: 'ignored' },
  { timestamp: 10, input_length: 700, output_length: 40, hash_ids: [1, 2, 8] },
  { timestamp: 20.5, input_length: 3000, output_length: 50, hash_ids: [1, 2, 3, 5, 6, 7] },
]);

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

  it('makes the parent the deepest earlier request whose full blocks are a prefix of the prompt, the latest of equals', () => {
    expect(Array.from(t.parent)).toEqual([-1, 0, 1, 0, 2]);
  });

  it('shares the parent\'s full blocks x 512 tokens, at most either prompt', () => {
    expect(Array.from(t.shared)).toEqual([0, Math.min(512, 1000, 2000), Math.min(3 * 512, 2000, 1600), Math.min(512, 1000, 700), Math.min(3 * 512, 1600, 3000)]);
  });

  it('routes by the second block id + 1, the first where there is one, 0 where there is none', () => {
    const one = parseTrace(
      jsonl([
        { timestamp: 0, input_length: 100, output_length: 1, hash_ids: [7] },
        { timestamp: 1, input_length: 100, output_length: 1, hash_ids: [] },
        { timestamp: 2, input_length: 100, output_length: 1, hash_ids: [7] },
      ]),
      'x.jsonl',
      'mooncake',
    );
    expect(Array.from(t.routeKey)).toEqual([3, 3, 3, 3, 3]);
    expect(Array.from(one.routeKey)).toEqual([8, 0, 8]);
    // a prompt shorter than a block has no full block to share
    expect(Array.from(one.parent)).toEqual([-1, -1, -1]);
    expect(Array.from(one.shared)).toEqual([0, 0, 0]);
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
    expect(Array.from(t.parent)).toEqual([-1, -1, -1]);
    expect(Array.from(t.shared)).toEqual([0, 0, 0]);
    expect(Array.from(t.routeKey)).toEqual([0, 0, 0]);
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
    expect(Array.from(touched.parent)).toEqual(Array.from(first.parent));
    // changed: parsed again, with the new contents
    writeFileSync(path, jsonl([{ timestamp: 0, input_length: 1, output_length: 1, hash_ids: [] }]));
    expect(loadTrace(path, 'memo.jsonl').requests).toBe(1);
  });
});
