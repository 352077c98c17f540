/**
 * A capacity search's result as an Arrow table: one row per design, its grid values first, then
 * its cost, capacity (as a load scale, requests per second, per GPU and per dollar), the seeds
 * its cases took there, the edge above it and whether it is on the front. The schema's metadata
 * holds the rest of the result (`servesim.capacity`, JSON without the designs).
 */
import { ArrowPieces, RecordTable } from '../sweep/arrow.js';
import type { ResultColumn } from '../sweep/table.js';
import type { CapacityDesign, CapacityResult } from './api.js';

interface DesignRow {
  readonly design: CapacityDesign;
  readonly settled: boolean;
}

/** A grid path's column: numbers when every design's value is one, else text. */
function pathColumn(result: CapacityResult, path: string): ResultColumn<DesignRow> {
  const numeric = result.designs.every((d) => typeof d.values[path] === 'number');
  return numeric
    ? { name: path, type: 'float64', nullable: false, valueOf: (r) => r.design.values[path]! }
    : { name: path, type: 'string', nullable: false, names: [...new Set(result.designs.map((d) => String(d.values[path])))], valueOf: (r) => String(r.design.values[path]) };
}

const DESIGN_COLUMNS: readonly ResultColumn<DesignRow>[] = [
  { name: 'cost', type: 'float64', nullable: false, valueOf: (r) => r.design.cost },
  { name: 'rate_scale', type: 'float64', nullable: true, valueOf: (r) => r.design.rate_scale },
  { name: 'requests_per_second', type: 'float64', nullable: true, valueOf: (r) => r.design.requests_per_second },
  { name: 'requests_per_second_per_gpu', type: 'float64', nullable: true, valueOf: (r) => r.design.requests_per_second_per_gpu },
  { name: 'requests_per_dollar', type: 'float64', nullable: true, valueOf: (r) => r.design.requests_per_dollar },
  { name: 'seeds', type: 'int32', nullable: true, valueOf: (r) => (r.design.cases.length === 0 ? null : Math.max(...r.design.cases.map((c) => c.seeds))) },
  { name: 'above_rate_scale', type: 'float64', nullable: true, valueOf: (r) => r.design.above?.rate_scale ?? null },
  { name: 'above_verdict', type: 'string', nullable: true, names: ['PASS', 'FAIL', 'UNDECIDED', 'REFUSED'], valueOf: (r) => r.design.above?.verdict ?? null },
  { name: 'above_why', type: 'string', nullable: true, valueOf: (r) => r.design.above?.why ?? null },
  { name: 'probes', type: 'int32', nullable: false, valueOf: (r) => r.design.probes },
  { name: 'instances', type: 'float64', nullable: false, valueOf: (r) => r.design.instances },
  { name: 'pareto', type: 'bool', nullable: false, valueOf: (r) => r.design.pareto },
  { name: 'settled', type: 'bool', nullable: false, valueOf: (r) => r.settled },
];

/** The table's metadata: what it is, and the result apart from its designs. */
function capacityMetadata(result: CapacityResult): [string, string][] {
  const { designs, ...search } = result;
  return [
    ['servesim.table', 'capacity'],
    ['servesim.problem', result.problemId],
    ['servesim.rows', String(designs.length)],
    ['servesim.capacity', JSON.stringify(search)],
  ];
}

/** The result as an Arrow IPC stream, in pieces: the schema, one record batch, the end. */
export function* capacityArrowPieces(result: CapacityResult): Generator<Uint8Array> {
  const unsettled = new Set(result.unsettled);
  const table = new RecordTable([...result.paths.map((p) => pathColumn(result, p)), ...DESIGN_COLUMNS], capacityMetadata(result));
  const writer = new ArrowPieces(table.schema);
  yield writer.head();
  yield writer.write(table.batch(result.designs.map((design, d) => ({ design, settled: !unsettled.has(d) }))));
  yield writer.finish();
}
