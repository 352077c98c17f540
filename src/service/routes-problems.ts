/** The shipped problems: a list, and each one as the typed problem (times in microseconds). */
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
          summary: 'A shipped problem, typed and with every default filled in (times in microseconds)',
          responses: { 200: { description: 'the problem', types: ['application/json'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request) => ctx.problems.get(request.params.id),
  );
}
