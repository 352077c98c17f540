/**
 * POST /v1/sweeps: runs a sweep while the client waits and answers its table. Arrow goes out
 * as the grid points finish (those that finish together in one record batch); JSON, CSV and
 * Parquet once the sweep is done.
 * Sweeps over the synchronous limit are sent to POST /v1/jobs.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServesimError } from '../errors.js';
import { ARROW_STREAM_TYPE, SweepTable } from '../sweep/arrow.js';
import type { SweepOutcome, SweepRow } from '../sweep/run.js';
import { sweepFromObjectInSlices, type GridSize, type Sweep } from '../sweep/spec.js';
import type { ServiceContext } from './context.js';
import { watchDisconnect } from './disconnect.js';
import type { Release } from './slots.js';
import { NOT_ACCEPTABLE, RUN_ERRORS, SWEEP_TABLE_JSON } from './openapi.js';
import { sweepBodySchema } from './schemas.js';
import { runSweepStreaming } from './streaming-run.js';
import { ArrowAnswer, encodeTable, negotiate, TABLE_MEDIA_TYPES } from './tables.js';

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
  app.post(
    '/v1/sweeps',
    {
      schema: { body: sweepBodySchema },
      config: {
        doc: {
          summary: 'Run a sweep and answer its table (Arrow stream, JSON or CSV by Accept)',
          responses: {
            200: { description: 'one row per (grid point, case); Arrow batches stream as points finish', types: Object.values(TABLE_MEDIA_TYPES), json: SWEEP_TABLE_JSON },
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
