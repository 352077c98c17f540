/**
 * The params and tables of a batch's configurations as one block each, for an engine that runs
 * them all at once (the WGSL kernel): configuration k's params start at `bases[k]`, and its
 * table indices are rebased into the concatenated tables, so that a table read needs no
 * per-configuration offset; a trace's offset (P.OFF_TRACE, in words) is rebased alike. Section
 * offsets in the params (P.OFF_RING, ...) stay relative to the configuration's own start.
 */
import type { EngineConfig } from './compile.js';
import { P, TABLE_WORDS, layoutConstants } from './layout.js';

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

/** Whether two configurations' tables hold the same words (a sweep's grid points often do: a trace's always). */
function sameWords(a: Uint32Array, b: Uint32Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * @example
 * const { params, tables, bases } = batchParams([a, b]);
 * // b's params, read from bases[1], sample b's tables out of `tables`:
 * sampleTable(tables, params[bases[1] + P.T_OUTPUT], u) === sampleTable(b.tables, b.params[P.T_OUTPUT], u)
 */
export function batchParams(configs: readonly EngineConfig[]): BatchParams {
  const params = new Uint32Array(configs.reduce((n, c) => n + c.params.length, 0));
  // configurations with the same tables share one copy: a trace is read once per batch
  const blocks: { tables: Uint32Array; at: number }[] = [];
  let tableWords = 0;
  const starts = configs.map((config) => {
    const same = blocks.find((b) => sameWords(b.tables, config.tables));
    if (same !== undefined) return same.at;
    blocks.push({ tables: config.tables, at: tableWords });
    tableWords += config.tables.length;
    return tableWords - config.tables.length;
  });
  const tables = new Uint32Array(tableWords);
  for (const b of blocks) tables.set(b.tables, b.at);
  const bases: number[] = [];
  let base = 0;
  configs.forEach((config, k) => {
    const start = starts[k]!;
    params.set(config.params, base);
    for (const word of TABLE_PARAMS) params[base + word] = config.params[word]! + start / TABLE_WORDS;
    if (config.params[P.TRACE_ROWS] !== 0) params[base + P.OFF_TRACE] = config.params[P.OFF_TRACE]! + start;
    bases.push(base);
    base += config.params.length;
  });
  return { params, tables, bases };
}
