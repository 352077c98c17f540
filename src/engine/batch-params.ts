/**
 * The params and tables of a batch's configurations as one block each, for an engine that runs
 * them all at once (the WGSL kernel): configuration k's params start at `bases[k]`, and its
 * table indices are rebased into the concatenated tables, so that a table read needs no
 * per-configuration offset. Section offsets (P.OFF_RING, ...) stay relative to the
 * configuration's own start.
 */
import type { EngineConfig } from './compile.js';
import { TABLE_WORDS, layoutConstants } from './layout.js';

export interface BatchParams {
  /** Every configuration's params, one after another. */
  readonly params: Uint32Array;
  /** Every configuration's tables, one after another. */
  readonly tables: Uint32Array;
  /** Where each configuration's params start in `params`. */
  readonly bases: readonly number[];
}

/** The params that index a table: layout.ts names them P.T_*. */
const TABLE_PARAMS = Object.entries(layoutConstants())
  .filter(([name]) => name.startsWith('P_T_'))
  .map(([, word]) => word);

/**
 * @example
 * const { params, tables, bases } = batchParams([a, b]);
 * // b's params, read from bases[1], sample b's tables out of `tables`:
 * sampleTable(tables, params[bases[1] + P.T_OUTPUT], u) === sampleTable(b.tables, b.params[P.T_OUTPUT], u)
 */
export function batchParams(configs: readonly EngineConfig[]): BatchParams {
  const params = new Uint32Array(configs.reduce((n, c) => n + c.params.length, 0));
  const tables = new Uint32Array(configs.reduce((n, c) => n + c.tables.length, 0));
  const bases: number[] = [];
  let base = 0;
  let tableWords = 0;
  for (const config of configs) {
    params.set(config.params, base);
    tables.set(config.tables, tableWords);
    for (const word of TABLE_PARAMS) params[base + word] = config.params[word]! + tableWords / TABLE_WORDS;
    bases.push(base);
    base += config.params.length;
    tableWords += config.tables.length;
  }
  return { params, tables, bases };
}
