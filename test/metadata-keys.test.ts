/**
 * Arrow and Parquet carry the same `servesim.*` keys, whichever way the table is written (a
 * file, a stream, a POST /v1/sweeps answer) and whether the engine was chosen (`auto`, which
 * says why) or named. The HTTP half needs `npm run build` (the pool's workers run from dist/).
 */
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { readSweepArrow, sweepToArrow } from '../src/sweep/arrow.js';
import { sweepToParquet } from '../src/sweep/parquet.js';
import type { SweepMeta } from '../src/sweep/run.js';
import { RUN_METADATA_KEYS } from '../src/sweep/table.js';
import { hotPrefixSweep, syntheticOutcome } from './report-fixtures.js';

afterAll(closeEngines);

function parquetKeys(bytes: Uint8Array): string[] {
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return (parquetMetadata(buffer).key_value_metadata ?? []).map((kv) => kv.key).sort();
}

function arrowKeys(bytes: Uint8Array): string[] {
  return [...tableFromIPC(bytes).schema.metadata.keys()].sort();
}

describe('the servesim metadata keys', () => {
  const sweep = hotPrefixSweep({ 'gpu.slots': [8, 16] });
  const outcome = syntheticOutcome(sweep);
  const chosen: SweepMeta = { ...outcome.meta, choice: 'auto: the CPU pool, below the measured crossover' };

  it('are the same in Arrow (file and stream) and Parquet, the engine named or chosen', () => {
    const sets = [outcome.meta, chosen].flatMap((meta) => [
      arrowKeys(sweepToArrow(sweep, outcome.rows, meta, { format: 'file' })),
      arrowKeys(sweepToArrow(sweep, outcome.rows, meta, { format: 'stream' })),
      parquetKeys(sweepToParquet(sweep, outcome.rows, meta)),
    ]);
    expect(sets[0]).toEqual(expect.arrayContaining([...RUN_METADATA_KEYS, 'servesim.problem', 'servesim.goals']));
    for (const keys of sets) expect(keys).toEqual(sets[0]);
    // a partial table adds the same keys to both
    const partial = [arrowKeys(sweepToArrow(sweep, outcome.rows.slice(0, 4), chosen, { stopped: 'cancelled' })), parquetKeys(sweepToParquet(sweep, outcome.rows.slice(0, 4), chosen, 'cancelled'))];
    expect(partial[1]).toEqual(partial[0]);
    expect(partial[0]).toEqual(expect.arrayContaining(['servesim.missing_points', 'servesim.stopped']));
  });

  it('say why auto chose the engine, and nothing where it was named', () => {
    const read = (meta: SweepMeta) => tableFromIPC(sweepToArrow(sweep, outcome.rows, meta)).schema.metadata.get('servesim.engine_choice');
    expect([read(chosen), read(outcome.meta)]).toEqual([chosen.choice, '']);
  });

  it.each(['auto', 'cpu'])('are the same in the Arrow and Parquet answers of POST /v1/sweeps (engine %s)', async (engine) => {
    const app = buildServer();
    try {
      const body = { problem: 'mmc', grid: { 'server.slots': [4, 5] }, seeds: 2, engine };
      const answer = async (accept: string): Promise<Uint8Array> => {
        const res = await app.inject({ method: 'POST', url: '/v1/sweeps', headers: { accept }, payload: body });
        expect(res.statusCode, res.body.slice(0, 200)).toBe(200);
        return new Uint8Array(res.rawPayload);
      };
      const arrow = await answer('application/vnd.apache.arrow.stream');
      const parquet = await answer('application/vnd.apache.parquet');
      expect(parquetKeys(parquet)).toEqual(arrowKeys(arrow));
      // as servesim report reads the stream: the last batch's run metadata in place of the schema's
      expect([...readSweepArrow(arrow, 'the answer').table.schema.metadata.keys()].sort()).toEqual(arrowKeys(arrow));
    } finally {
      await app.close();
    }
  });
});
