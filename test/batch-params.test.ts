// The params and tables of a batch as one block each (src/engine/batch-params.ts), as the WGSL
// kernel reads them: each configuration, read from its base, is the configuration it was, and
// tables two configurations share (a trace's, the same distributions') are there once.
import { describe, expect, it } from 'vitest';
import { batchParams } from '../src/engine/batch-params.js';
import { TABLE_WORDS, layoutConstants } from '../src/engine/layout.js';
import { END_OF_TIME, runReference } from '../src/engine/reference.js';
import { extractResult } from '../src/engine/result.js';
import { sampleTable } from '../src/engine/rng.js';
import { advance, init } from '../src/engine/simulate.js';
import { configFor } from './support.js';
import { conversations, traceProblem } from './trace-support.js';

// three kinds (tables of each), one grid point with a larger params block (its ring) and the
// same tables as the first, and two replays of one trace
const lines = conversations(80);
const configs = [
  configFor('hot-prefix').config,
  configFor('coding-agents', [], 'server-dies').config,
  configFor('mmc').config,
  configFor('hot-prefix', ['gpu.replicas=8']).config,
  traceProblem('batch-a', lines, 'duration: 20s, warmup: 5s').config,
  traceProblem('batch-b', lines, 'duration: 20s, warmup: 5s', 'replicas: 2, slots: 8, kvTokens: 400000').config,
];
const batch = batchParams(configs);
const LAYOUT = layoutConstants();
const TABLE_PARAMS = Object.entries(LAYOUT).filter(([name]) => name.startsWith('P_T_')).map(([, word]) => word);
const P_TRACE_ROWS = LAYOUT['P_TRACE_ROWS']!;
const P_OFF_TRACE = LAYOUT['P_OFF_TRACE']!;
const U = [0, 1, 0x3fffff, 0x7fffffff, 0x80000000, 0xdeadbeef, 0xffffffff];

describe('batchParams', () => {
  it('concatenates the params, each configuration at its base, and each distinct configuration\'s tables once', () => {
    expect(batch.bases).toEqual(configs.map((_, k) => configs.slice(0, k).reduce((n, c) => n + c.params.length, 0)));
    expect(batch.params.length).toBe(configs.reduce((n, c) => n + c.params.length, 0));
    expect(configs[3]!.tables).toEqual(configs[0]!.tables);
    expect(configs[5]!.tables).toEqual(configs[4]!.tables);
    expect(configs[4]!.params[P_TRACE_ROWS]).toBe(80);
    expect(batch.tables.length).toBe([0, 1, 2, 4].reduce((n, k) => n + configs[k]!.tables.length, 0));
  });

  it('keeps every word but the table indices, and those sample what they sampled', () => {
    expect(TABLE_PARAMS.length).toBeGreaterThanOrEqual(8);
    configs.forEach((config, k) => {
      const own = batch.params.subarray(batch.bases[k], batch.bases[k]! + config.params.length);
      for (let word = 0; word < config.params.length; word++) {
        if (TABLE_PARAMS.includes(word)) {
          expect(own[word]! * TABLE_WORDS).toBeLessThan(batch.tables.length);
          for (const u of U) expect(sampleTable(batch.tables, own[word]!, u)).toBe(sampleTable(config.tables, config.params[word]!, u));
        } else if (word === P_OFF_TRACE && config.params[P_TRACE_ROWS] !== 0) {
          // the trace's rows, where the batch's tables hold them
          const rows = config.params[P_TRACE_ROWS]! * LAYOUT['TRACE_WORDS']!;
          expect(batch.tables.subarray(own[word], own[word]! + rows)).toEqual(config.tables.subarray(config.params[word], config.params[word]! + rows));
        } else {
          expect(own[word], `configuration ${k}, params word ${word}`).toBe(config.params[word]);
        }
      }
    });
  });

  it('simulates, read from a base with the batch tables, what each configuration simulates alone', () => {
    const seed = 9;
    const first = 40;
    configs.forEach((config, k) => {
      // the reference engine reads params from 0: the batch's params from the base are that
      const buffers = { params: batch.params.subarray(batch.bases[k]), tables: batch.tables, state: new Uint32Array(config.stateWords) };
      const records = new Uint32Array(3 * config.resultWords);
      for (let i = 0; i < 3; i++) {
        init(buffers, 0, seed, first + i);
        advance(buffers, 0, END_OF_TIME);
        records.set(extractResult(config, buffers.state, 0), i * config.resultWords);
      }
      expect(records).toEqual(runReference(config, seed, first, 3));
    });
  });
});
