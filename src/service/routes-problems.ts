/**
 * The shipped problems: a list; each one as its file states it, which POST /v1/sweeps and
 * POST /v1/hints take back as an inline `problem`, changed or not; and each one as servesim
 * reads it (defaults filled in, times in microseconds), to look at, not to send.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from './context.js';
import { NOT_FOUND } from './openapi.js';
import { idParamsSchema } from './schemas.js';

export function registerProblemRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/v1/problems',
    {
      config: {
        doc: {
          summary: 'The shipped problems: id, title, goals, cases',
          responses: { 200: { description: '{problems: [...]}', types: ['application/json'] } },
        },
      },
    },
    async () => ({ problems: ctx.problems.list() }),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/problems/:id',
    {
      schema: { params: idParamsSchema },
      config: {
        doc: {
          summary: 'A shipped problem as its file states it (problems/problem.schema.json): send it back, changed or not, as the `problem` of a sweep or hint',
          responses: { 200: { description: 'the problem file as JSON', types: ['application/json'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request) => ctx.problems.get(request.params.id),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/problems/:id/resolved',
    {
      schema: { params: idParamsSchema },
      config: {
        doc: {
          summary: 'A shipped problem as servesim reads it: every default filled in, times in microseconds, a trace as its size and span. To look at; a sweep takes GET /v1/problems/{id} instead',
          responses: { 200: { description: 'the typed problem', types: ['application/json'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request) => ctx.problems.resolved(request.params.id),
  );
}
