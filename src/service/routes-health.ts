/** GET /healthz: the server answers, with what it runs on and how busy it is. */
import { availableParallelism } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { packageVersion } from '../version.js';
import type { ServiceContext } from './context.js';

export function registerHealthRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/healthz',
    { config: { doc: { summary: 'Liveness, engine and load', responses: { 200: { description: 'ok', types: ['application/json'] } } } } },
    async () => ({
      ok: true,
      version: packageVersion(),
      engines: { cpu: { threads: availableParallelism() } },
      sweeps: { running: ctx.slots.busy, max: ctx.slots.size },
      jobs: ctx.jobs.counts(),
      limits: ctx.limits,
    }),
  );
}
