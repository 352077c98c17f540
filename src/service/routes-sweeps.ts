/**
 * POST /v1/sweeps: runs a sweep while the client waits and answers its table. Arrow goes out
 * as the grid points finish (one record batch each); JSON and CSV once the sweep is done.
 * Sweeps over the synchronous limit are sent to POST /v1/jobs.
 */
import { RecordBatchStreamWriter } from 'apache-arrow';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServesimError } from '../errors.js';
import { ARROW_STREAM_TYPE, SweepTable } from '../sweep/arrow.js';
import type { SweepOutcome } from '../sweep/run.js';
import { sweepFromObject, type GridSize, type Sweep } from '../sweep/spec.js';
import type { ServiceContext } from './context.js';
import { watchDisconnect } from './disconnect.js';
import { busy } from './errors.js';
import { NOT_ACCEPTABLE, RUN_ERRORS, SWEEP_TABLE_JSON } from './openapi.js';
import { sweepBodySchema } from './schemas.js';
import { runSweepStreaming } from './streaming-run.js';
import { encodeTable, negotiate, TABLE_MEDIA_TYPES } from './tables.js';

/**
 * A request body as a sweep: problems by shipped id or inline only (no paths on a server), the
 * grid refused over the server's limits (and the route's own, `checkSize`) before any point is
 * checked.
 */
export function parseSweepBody(ctx: ServiceContext, body: unknown, checkSize?: (size: GridSize) => void): Sweep {
  return sweepFromObject(body, { maxInstances: ctx.limits.maxInstances, maxPoints: ctx.limits.maxGridPoints, ...(checkSize ? { checkSize } : {}) });
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
      const sweep = parseSweepBody(ctx, request.body, (size) => {
        if (size.instances <= ctx.limits.syncMaxInstances) return;
        throw new ServesimError(
          'SERVESIM_GRID_TOO_LARGE',
          `${size.instances.toLocaleString('en')} instances (${size.points} points x ${size.cases} cases x ${size.seeds} seeds) is over the ${ctx.limits.syncMaxInstances.toLocaleString('en')} this endpoint runs while you wait; POST the same body to /v1/jobs`,
          'grid',
        );
      });
      const release = ctx.slots.tryAcquire();
      if (release === undefined) throw busy(`${ctx.slots.size} sweeps are running, the most this server runs at once`, ctx.limits.retryAfterSeconds);
      const watch = watchDisconnect(reply);
      try {
        if (format === 'arrow') return await streamArrow(ctx, sweep, reply, watch.signal);
        const outcome = await ctx.runSweep(sweep, { signal: watch.signal });
        if (outcome.unfinished.length > 0) throw incomplete(outcome);
        const { type, body } = encodeTable(format, sweep, outcome);
        return reply.type(type).send(body);
      } finally {
        watch.dispose();
        release();
      }
    },
  );
}

/**
 * Sends the schema and the first batch once the first point is done (so an early failure
 * still gets a proper error answer), then a batch per point. A failure after that cuts the
 * stream rather than ending it cleanly: a short table must not look complete.
 */
async function streamArrow(ctx: ServiceContext, sweep: Sweep, reply: FastifyReply, signal: AbortSignal): Promise<FastifyReply> {
  const writer = new RecordBatchStreamWriter();
  const body = writer.toNodeStream();
  let table: SweepTable | undefined;
  const outcome = await runSweepStreaming(ctx.runSweep, sweep, {
    signal,
    onMeta: (meta) => {
      table = new SweepTable(sweep, meta);
      writer.reset(undefined, table.schema);
      void reply.type(ARROW_STREAM_TYPE).send(body);
    },
    onPoint: (_point, rows) => {
      if (!signal.aborted) writer.write(table!.batch(rows));
    },
  });
  if (table === undefined) throw incomplete(outcome);
  if (outcome.unfinished.length > 0) body.destroy(incomplete(outcome));
  else writer.finish();
  return reply;
}
