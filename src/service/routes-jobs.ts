/**
 * Background sweeps: create (202), status, server-sent events, result (Arrow, JSON or CSV),
 * cancel. A cancelled or failed job keeps the points it finished.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from './context.js';
import { ServiceError } from './errors.js';
import type { JobEvent } from './jobs.js';
import { NOT_ACCEPTABLE, NOT_FOUND, SWEEP_TABLE_JSON } from './openapi.js';
import { parseSweepBody } from './routes-sweeps.js';
import { idParamsSchema, resultQuerySchema, sweepBodySchema } from './schemas.js';
import { encodeTable, negotiate, TABLE_MEDIA_TYPES } from './tables.js';
import { renderReport } from '../report/html.js';

/** A comment line now and then keeps proxies from closing a quiet event stream. */
const KEEP_ALIVE_MS = 15_000;

interface IdParams {
  readonly id: string;
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function registerJobRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const params = { params: idParamsSchema };

  app.post(
    '/v1/jobs',
    {
      schema: { body: sweepBodySchema },
      config: {
        doc: {
          summary: 'Start a sweep in the background',
          responses: {
            202: { description: 'the job: {id, status, links, ...}; Location names it', types: ['application/json'] },
            413: { description: 'sweep over the absolute limit; a body too large, too deep or with too many keys' },
            429: { description: 'too many jobs queued or running; see Retry-After' },
          },
        },
      },
    },
    async (request, reply) => {
      const job = ctx.jobs.create(await parseSweepBody(ctx, request.body, () => ctx.jobs.checkRoom()));
      return reply.code(202).header('location', job.status().links.self).send(job.status());
    },
  );

  app.get<{ Params: IdParams }>(
    '/v1/jobs/:id',
    {
      schema: params,
      config: { doc: { summary: 'A job: state, points done of total, unfinished points', responses: { 200: { description: 'the job', types: ['application/json'] }, 404: NOT_FOUND } } },
    },
    async (request) => ctx.jobs.get(request.params.id).status(),
  );

  app.get<{ Params: IdParams }>(
    '/v1/jobs/:id/events',
    {
      schema: params,
      config: {
        doc: {
          summary: 'Server-sent events: `state` (now), `progress` as points finish, then `done`, `failed` or `cancelled`',
          responses: { 200: { description: 'an event stream, ending after the final event', types: ['text/event-stream'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request, reply) => {
      const job = ctx.jobs.get(request.params.id);
      const stream = new PassThrough();
      stream.write(sse('state', job.status()));
      if (job.isFinal) {
        stream.end(sse(job.state, job.status()));
      } else {
        const keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
        const stop = (): void => {
          unsubscribe();
          clearInterval(keepAlive);
        };
        const unsubscribe = job.subscribe((event: JobEvent) => {
          if (event.event === 'progress') return void stream.write(sse(event.event, event.data));
          stop();
          stream.end(sse(event.event, event.data));
        });
        reply.raw.once('close', stop);
      }
      return reply.type('text/event-stream').header('cache-control', 'no-cache').send(stream);
    },
  );

  app.get<{ Params: IdParams; Querystring: { partial?: string } }>(
    '/v1/jobs/:id/result',
    {
      schema: { ...params, querystring: resultQuerySchema },
      config: {
        doc: {
          summary: "A job's table (Arrow stream, JSON or CSV by Accept); ?partial=1 for the points finished so far",
          responses: {
            200: { description: 'one row per finished (grid point, case)', types: Object.values(TABLE_MEDIA_TYPES), json: SWEEP_TABLE_JSON },
            404: NOT_FOUND,
            406: NOT_ACCEPTABLE,
            409: { description: 'the job has not finished (ask with ?partial=1)' },
          },
        },
      },
    },
    async (request, reply) => {
      const format = negotiate(request.headers.accept);
      const job = ctx.jobs.get(request.params.id);
      const partial = request.query.partial === '1' || request.query.partial === 'true';
      if (!job.isFinal && !partial) {
        throw new ServiceError('SERVESIM_JOB_NOT_FINISHED', 409, `job ${job.id} is ${job.state}; wait for it (GET ${job.status().links.events}) or ask for ?partial=1`);
      }
      const { type, body } = encodeTable(format, job.sweep, job.outcome());
      return reply.type(type).send(body);
    },
  );

  app.get<{ Params: IdParams }>(
    '/v1/jobs/:id/report',
    {
      schema: params,
      config: {
        doc: {
          summary: "A job's results as the HTML report servesim report writes (the points finished so far)",
          responses: { 200: { description: 'one self-contained HTML page', types: ['text/html'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request, reply) => {
      const job = ctx.jobs.get(request.params.id);
      return reply.type('text/html; charset=utf-8').send(renderReport({ sweep: job.sweep, outcome: job.outcome() }));
    },
  );

  app.delete<{ Params: IdParams }>(
    '/v1/jobs/:id',
    {
      schema: params,
      config: {
        doc: {
          summary: 'Cancel a job; its finished points stay (GET its result). A finished job is left as it is.',
          responses: { 200: { description: 'the job, once stopped', types: ['application/json'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request) => (await ctx.jobs.cancel(request.params.id)).status(),
  );
}
