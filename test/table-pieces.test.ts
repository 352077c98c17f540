/**
 * A results table encoded in pieces (as the service sends it, a slice of the event loop at a
 * time, Arrow in batches of many rows) holds what the table encoded whole holds: the same JSON
 * text, the same Arrow and Parquet values, nulls included. Needs `npm run build` first (the
 * pool's workers run from dist/).
 */
import { tableFromIPC } from 'apache-arrow';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { sweepArrowPieces, sweepToArrow } from '../src/sweep/arrow.js';
import { formatSweepJson, sweepToJson } from '../src/sweep/format.js';
import { sweepParquetPieces, sweepToParquet } from '../src/sweep/parquet.js';
import { runSweep, type SweepOutcome } from '../src/sweep/run.js';
import { sweepFromObject, type Sweep } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

let sweep: Sweep;
let outcome: SweepOutcome;

beforeAll(async () => {
  // 5 points, 2 cases: a job problem has no GPU, so its GPU columns are nulls
  sweep = sweepFromObject({
    problem: { ...TINY_QUEUE, cases: ['as-given', 'peak-hour'] },
    grid: { 'server.slots': [1, 2, 3, 4, 5] },
    seeds: 2,
    engine: 'cpu',
  });
  outcome = await runSweep(sweep);
});

afterAll(closeEngines);

const joined = (pieces: Iterable<Uint8Array>): Uint8Array => Buffer.concat([...pieces]);

describe('a table in pieces', () => {
  it("is JSON.stringify's text, rows or none", () => {
    expect(formatSweepJson(sweep, outcome)).toBe(`${JSON.stringify(sweepToJson(sweep, outcome), null, 2)}\n`);
    const none = { ...outcome, rows: [], finished: [], unfinished: sweep.points.map((p) => p.index), cancelled: true };
    expect(formatSweepJson(sweep, none)).toBe(`${JSON.stringify(sweepToJson(sweep, none), null, 2)}\n`);
  });

  it('holds the Arrow values of a batch a point, in batches of 4 rows', () => {
    const whole = tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta));
    const pieces = tableFromIPC(joined(sweepArrowPieces(sweep, outcome.rows, outcome.meta, { rowsPerBatch: 4 })));
    expect(whole.batches).toHaveLength(5);
    expect(pieces.batches.map((b) => b.numRows)).toEqual([4, 4, 2]);
    expect(pieces.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(whole.schema.fields.map((f) => [f.name, String(f.type), f.nullable]));
    // every value as the JSON table has it (written without Arrow), nulls included
    expect(pieces.toArray().map((r) => r.toJSON())).toEqual(sweepToJson(sweep, outcome)['rows']);
    expect(pieces.getChild('gpu_utilization')!.nullCount).toBe(10);
    expect(pieces.getChild('server.slots')!.toArray()).toEqual(Int32Array.from([1, 1, 2, 2, 3, 3, 4, 4, 5, 5]));
  });

  it('holds the Parquet rows of the file written whole, in row groups of 4', async () => {
    const read = (bytes: Uint8Array) => parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
    const whole = await read(sweepToParquet(sweep, outcome.rows, outcome.meta));
    const pieces = await read(joined(sweepParquetPieces(sweep, outcome.rows, outcome.meta, { rowsPerGroup: 4 })));
    expect(pieces).toEqual(whole);
    expect(pieces).toHaveLength(10);
  });
});
