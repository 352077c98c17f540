/**
 * POST /v1/sweeps: runs a sweep while the client waits and answers its table. Arrow goes out
 * as the grid points finish (those that finish together in one record batch); JSON, CSV and
 * Parquet once the sweep is done.
 * Sweeps over the synchronous limit are sent to POST /v1/jobs.
 * `?table=seeds` answers the per-seed table instead (Arrow or Parquet), once the sweep is done:
 * its rows are the sweep's instances, so the synchronous limit bounds them. Jobs do not keep
 * one: their points may run on queue workers, which send back rows, and a finished job's seeds
 * would stay in memory for as long as the job is kept.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServesimError } from '../errors.js';
import { ARROW_STREAM_TYPE, SweepTable } from '../sweep/arrow.js';
import { PARQUET_TYPE } from '../sweep/parquet.js';
import type { SweepOutcome, SweepRow } from '../sweep/run.js';
import type { SeedRow } from '../sweep/table.js';
import { sweepFromObjectInSlices, type GridSize, type Sweep } from '../sweep/spec.js';
import type { ServiceContext } from './context.js';
import { watchDisconnect } from './disconnect.js';
import type { Release } from './slots.js';
import { NOT_ACCEPTABLE, RUN_ERRORS, SWEEP_TABLE_JSON } from './openapi.js';
import { sweepBodySchema, sweepQuerySchema } from './schemas.js';
import { runSweepStreaming } from './streaming-run.js';
import { ArrowAnswer, encodeSeedTable, encodeTable, negotiate, TABLE_MEDIA_TYPES, type TableFormat } from './tables.js';
import { ServiceError } from './errors.js';

/**
 * A request body as a sweep: problems by shipped id or inline only (no paths on a server), the
 * grid refused over the server's limits (and the route's own, `checkSize`: the place to refuse
 * a busy server too) before any point is listed, then checked in slices of the event loop.
 */
export function parseSweepBody(ctx: ServiceContext, body: unknown, checkSize?: (size: GridSize) => void): Promise<Sweep> {
  return sweepFromObjectInSlices(body, { maxInstances: ctx.limits.maxInstances, maxPoints: ctx.limits.maxGridPoints, ...(checkSize ? { checkSize } : {}) });
}

/** Why a sweep that should have finished did not. */
function incomplete(outcome: SweepOutcome): Error {
  if (outcome.cancelled) return new ServesimError('SERVESIM_CANCELLED', 'cancelled: the client went away');
  return outcome.error ?? new Error(`sweep stopped with ${outcome.unfinished.length} points unfinished`);
}

export function registerSweepRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.post<{ Querystring: { table?: 'summary' | 'seeds' } }>(
    '/v1/sweeps',
    {
      schema: { body: sweepBodySchema, querystring: sweepQuerySchema },
      config: {
        doc: {
          summary: 'Run a sweep and answer its table (Arrow stream, Parquet, JSON or CSV by Accept); ?table=seeds: a row a seed',
          responses: {
            200: { description: 'one row per (grid point, case); Arrow batches stream as points finish. With ?table=seeds one row per (grid point, case, seed), Arrow or Parquet', types: Object.values(TABLE_MEDIA_TYPES), json: SWEEP_TABLE_JSON },
            ...RUN_ERRORS,
            406: NOT_ACCEPTABLE,
            413: { description: 'sweep over the synchronous limit (POST /v1/jobs instead) or the absolute one; a body too large, too deep or with too many keys' },
            429: { description: 'too many sweeps running; see Retry-After' },
          },
        },
      },
    },
    async (request, reply) => {
      const format = negotiate(request.headers.accept);
      const seedFormat = request.query.table === 'seeds' ? seedTableFormat(format) : null;
      let release: Release | undefined;
      const watch = watchDisconnect(reply);
      try {
        const sweep = await parseSweepBody(ctx, request.body, (size) => {
          if (size.instances > ctx.limits.syncMaxInstances) {
            throw new ServesimError(
              'SERVESIM_GRID_TOO_LARGE',
              `${size.instances.toLocaleString('en')} instances (${size.points} points x ${size.cases} cases x ${size.seeds} seeds) is over the ${ctx.limits.syncMaxInstances.toLocaleString('en')} this endpoint runs while you wait; POST the same body to /v1/jobs`,
              'grid',
            );
          }
          release = ctx.slots.take(ctx.limits.retryAfterSeconds);
        });
        if (seedFormat !== null) return await answerSeeds(ctx, sweep, seedFormat, reply, watch.signal);
        if (format === 'arrow') return await streamArrow(ctx, sweep, reply, watch.signal);
        const outcome = await ctx.runSweep(sweep, { signal: watch.signal });
        if (outcome.unfinished.length > 0) throw incomplete(outcome);
        const { type, body } = encodeTable(format, sweep, outcome);
        return reply.type(type).send(body);
      } finally {
        watch.dispose();
        release?.();
      }
    },
  );
}

/** The per-seed table's format: Arrow or Parquet, before any work. */
function seedTableFormat(format: TableFormat): 'arrow' | 'parquet' {
  if (format === 'arrow' || format === 'parquet') return format;
  throw new ServiceError('SERVESIM_NOT_ACCEPTABLE', 406, `the per-seed table (?table=seeds) comes as ${ARROW_STREAM_TYPE} or ${PARQUET_TYPE}, not ${TABLE_MEDIA_TYPES[format]}`);
}

/** Runs the sweep and answers its per-seed table, rows by grid point in the grid's order. */
async function answerSeeds(ctx: ServiceContext, sweep: Sweep, format: 'arrow' | 'parquet', reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> {
  const rows: SeedRow[][] = [];
  const outcome = await ctx.runSweep(sweep, { signal, onSeedRecords: (point, records) => void (rows[point.index] = records.map((record) => ({ point, record }))) });
  if (outcome.unfinished.length > 0) throw incomplete(outcome);
  const { type, body } = encodeSeedTable(format, sweep, rows.flat(), outcome.meta);
  return reply.type(type).send(body);
}

/**
 * Sends the schema and the first batch once the first point is done (so an early failure
 * still gets a proper error answer), then the points' rows as they finish (ArrowAnswer: those
 * that finish together in one batch). The last point's batch waits for
 * the run's end, to carry the whole sweep's engine and batches (the schema's are the first
 * point's). A failure after the first cuts the stream rather than ending it cleanly: a short
 * table must not look complete.
 */
async function streamArrow(ctx: ServiceContext, sweep: Sweep, reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> {
  let answer: ArrowAnswer | undefined;
  let taken = 0;
  let last: readonly SweepRow[] = [];
  const outcome = await runSweepStreaming(ctx.runSweep, sweep, {
    signal,
    onMeta: (meta) => {
      answer = new ArrowAnswer(new SweepTable(sweep, meta));
      void reply.type(ARROW_STREAM_TYPE).send(answer.body);
    },
    onPoint: (_point, rows) => {
      if (signal.aborted) return;
      if (++taken === sweep.points.length) last = rows;
      else answer!.add(rows);
    },
  });
  if (answer === undefined) throw incomplete(outcome);
  if (outcome.unfinished.length > 0) answer.body.destroy(incomplete(outcome));
  else await answer.end(last, outcome.meta);
  return reply;
}
