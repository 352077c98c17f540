/**
 * The JSON Schemas of the requests, generated from the zod schemas the CLI uses, so a body
 * means the same as a sweep file. Fastify validates with them (unknown keys refused) and the
 * OpenAPI document publishes them.
 */
import { z } from 'zod';
import { capacityRequestSchema } from '../capacity/api.js';
import { hintRequestSchema } from '../hint/api.js';
import { COLUMNS } from '../model/summary.js';
import { sweepFileSchema } from '../sweep/spec.js';

export type JsonSchema = Record<string, unknown>;

/**
 * A body's schema, with an example body that runs in seconds (`examples`, which the OpenAPI
 * document also gives as the body's example; a test sends each one).
 */
function requestSchema(schema: z.ZodType, description: string, example: Record<string, unknown>): JsonSchema {
  // fastify's ajv speaks draft-07; the input side, where defaulted fields are optional
  const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as JsonSchema;
  delete json['$schema'];
  return { description, ...json, examples: [example] };
}

export const sweepBodySchema = requestSchema(
  sweepFileSchema,
  'A sweep, as the YAML sweep files: `problem` is the id of a shipped problem (GET /v1/problems) or the problem itself (problems/problem.schema.json, as GET /v1/problems/{id} gives it); `grid` maps dotted paths (as --set) to values or {from, to, step}.',
  { problem: 'hot-prefix', grid: { 'gpu.slots': [8, 16], 'router.policy': ['least-loaded', 'prefix-affinity'] }, cases: ['peak-hour'], seeds: 16 },
);

export const hintBodySchema = requestSchema(
  hintRequestSchema,
  'A hint search: `problem` (a shipped id or the problem itself), `vary` (paths to search, as a sweep grid), an optional `cost` expression.',
  { problem: 'mmc', vary: { 'server.slots': { from: 1, to: 8, step: 1 } }, cost: 'server.slots' },
);

export const capacityBodySchema = requestSchema(
  capacityRequestSchema,
  'A capacity search: `problem` (a shipped id or the problem itself), `vary` (the designs, as a sweep grid; not the traffic rate, which the search scales), an optional `cost` expression for the Pareto front, `seeds`/`maxSeeds`/`confidence` as a hint\'s, `tolerance` (how close the lowest load not passing must be to the highest passing).',
  { problem: 'mmc', vary: { 'server.replicas': [1, 2] }, cost: 'server.replicas', seeds: 16, tolerance: 0.1 },
);

export const idParamsSchema: JsonSchema = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
  required: ['id'],
  additionalProperties: false,
};

export const resultQuerySchema: JsonSchema = {
  type: 'object',
  properties: {
    partial: { type: 'string', enum: ['0', '1', 'false', 'true'], description: 'answer with the finished points before the job ends' },
  },
  additionalProperties: false,
};

/** Which table POST /v1/sweeps answers. */
export const sweepQuerySchema: JsonSchema = {
  type: 'object',
  properties: {
    table: {
      type: 'string',
      enum: ['summary', 'seeds'],
      description: "'summary' (the default): a row per (grid point, case); 'seeds': a row per (grid point, case, seed), each seed's counts, percentiles and goals met (docs/outputs.md), as Arrow or Parquet",
    },
  },
  additionalProperties: false,
};

const COLUMN_TYPE = { count: 'integer', number: 'number', text: 'string', boolean: 'boolean' } as const;

/**
 * A sweep table's JSON body: one row per (grid point, case), the grid paths' values first
 * (`"gpu.slots": 8`), then every summary column with its meaning (src/model/summary.ts).
 * Numbers are null where they do not exist (a quantile of nothing, a component the design lacks).
 */
export const sweepTableSchema: JsonSchema = {
  type: 'object',
  properties: {
    sweep: { type: 'object', description: 'the sweep: id, problem, grid paths, cases, seeds, confidence, goals (milliseconds)' },
    meta: { type: 'object', description: 'how it ran: engine, adapter, seeds, batches, version' },
    rows: {
      type: 'array',
      items: {
        type: 'object',
        description: 'the grid paths\' values, then the summary columns',
        properties: Object.fromEntries([...COLUMNS].map(([name, c]) => [
          name,
          { type: c.kind === 'text' || c.kind === 'boolean' ? COLUMN_TYPE[c.kind] : [COLUMN_TYPE[c.kind], 'null'], description: c.meaning },
        ])),
        required: [...COLUMNS.keys()],
      },
    },
    unfinished: { type: 'array', description: 'grid points not run (a cancelled or failed sweep), with their index', items: { type: 'object' } },
    cancelled: { type: 'boolean' },
    error: { type: ['string', 'null'] },
  },
  required: ['sweep', 'meta', 'rows', 'unfinished', 'cancelled', 'error'],
};
