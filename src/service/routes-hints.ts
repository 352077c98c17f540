/**
 * POST /v1/hints: the cheapest configurations that pass, searched over the paths a client
 * varies. It holds an engine slot while it runs and stops when the client leaves. A string
 * `problem` names a shipped problem: the search is given no folder, so it reads no paths. The
 * synchronous instance limit bounds what the search may ask at once (HintOptions.maxInstances):
 * the whole grid on its first seeds, before it starts, and each later round's batches.
 */
import type { FastifyInstance } from 'fastify';
import { ServesimError } from '../errors.js';
import type { HintRequest } from '../hint/api.js';
import { gridPoints, type AxisSpec } from '../sweep/spec.js';
import type { ServiceContext } from './context.js';
import { watchDisconnect } from './disconnect.js';
import { RUN_ERRORS } from './openapi.js';
import { hintBodySchema } from './schemas.js';

/** A search's grid refused by its count of points, before any point is listed or checked. */
export function checkGridPoints(vary: HintRequest['vary'], limit: number): void {
  const points = gridPoints(vary as Record<string, AxisSpec>);
  if (points > limit) {
    throw new ServesimError('SERVESIM_GRID_TOO_LARGE', `${points.toLocaleString('en')} grid points; the limit is ${limit.toLocaleString('en')} points`, 'vary');
  }
}

export function registerHintRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.post(
    '/v1/hints',
    {
      schema: { body: hintBodySchema },
      config: {
        doc: {
          summary: 'Search the varied paths for the cheapest configurations that pass every case, while you wait (POST /v1/jobs/hints: in the background)',
          responses: {
            200: { description: 'the hint result: a Pareto set of passing configurations and why cheaper ones fail', types: ['application/json'] },
            ...RUN_ERRORS,
            413: { description: 'a grid over the points limit, or whose first seeds on every point are over the instance limit; a body too large, too deep or with too many keys' },
            429: { description: 'too many sweeps running; see Retry-After' },
          },
        },
      },
    },
    async (request, reply) => {
      const body = request.body as HintRequest;
      // the search checks every point of its grid before it starts: count it first
      checkGridPoints(body.vary, ctx.limits.maxGridPoints);
      const release = ctx.slots.take(ctx.limits.retryAfterSeconds);
      const watch = watchDisconnect(reply);
      try {
        // the client waits, as for POST /v1/sweeps: the same limit on what it may ask at once
        return await ctx.runHints(body, { signal: watch.signal, maxInstances: ctx.limits.syncMaxInstances });
      } finally {
        watch.dispose();
        release();
      }
    },
  );
}
