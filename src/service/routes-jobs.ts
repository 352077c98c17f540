/**
 * Background jobs: a sweep's create (202; searches: routes-searches.ts), and for every job its
 * status, server-sent events, result (a sweep's table as Arrow, JSON or CSV; a search's JSON,
 * a capacity search's also as Arrow), report and cancel. A cancelled or failed sweep keeps the
 * points it finished, a cancelled capacity search the designs it settled.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from './context.js';
import { ServiceError } from './errors.js';
import { SearchJob, type AnyJob, type JobEvent } from './jobs.js';
import { NOT_ACCEPTABLE, NOT_FOUND, SWEEP_TABLE_JSON } from './openapi.js';
import { parseSweepBody } from './routes-sweeps.js';
import { idParamsSchema, resultQuerySchema, sweepBodySchema } from './schemas.js';
import { encodeTable, negotiate, sliced, TABLE_MEDIA_TYPES } from './tables.js';
import { capacityArrowPieces } from '../capacity/arrow.js';
import type { CapacityResult } from '../capacity/api.js';
import { renderCapacityReport } from '../report/capacity.js';
import { renderReport } from '../report/html.js';

/** A search job's result, or why it has none. */
function searchResult(job: SearchJob): unknown {
  if (!job.isFinal) {
    throw new ServiceError('SERVESIM_JOB_NOT_FINISHED', 409, `job ${job.id} is ${job.state}; a search's result comes when it ends (GET ${job.status().links.events}: its progress)`);
  }
  if (job.result === null) {
    throw new ServiceError('SERVESIM_JOB_NO_RESULT', 409, `job ${job.id} ${job.state === 'failed' ? 'failed' : `was ${job.state}`} without a result${job.state === 'failed' ? ' (GET it: the error)' : ''}`);
  }
  return job.result;
}

/** What a search job's result comes as: JSON, and a capacity search's designs also as an Arrow table. */
function searchFormats(job: SearchJob): readonly ('json' | 'arrow')[] {
  return job.kind === 'capacity' ? ['json', 'arrow'] : ['json'];
}

function isSearch(job: AnyJob): job is SearchJob {
  return job instanceof SearchJob;
}

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
      config: { doc: { summary: "A job: its state; a sweep's points done of total and unfinished points, a search's last progress", responses: { 200: { description: 'the job', types: ['application/json'] }, 404: NOT_FOUND } } },
    },
    async (request) => ctx.jobs.get(request.params.id).status(),
  );

  app.get<{ Params: IdParams }>(
    '/v1/jobs/:id/events',
    {
      schema: params,
      config: {
        doc: {
          summary: 'Server-sent events: `state` (now), `progress` (a sweep: as points finish; a hint: as points are evaluated; a capacity search: a round at a time), then `done`, `failed` or `cancelled`',
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
          summary: "A job's result. A sweep's table (Arrow stream, JSON or CSV by Accept; ?partial=1 for the points finished so far); a hint's JSON (as POST /v1/hints answers); a capacity search's JSON (as servesim capacity --format json) or Arrow (a row per design)",
          responses: {
            200: { description: 'a sweep: one row per finished (grid point, case); a search: its result', types: Object.values(TABLE_MEDIA_TYPES), json: SWEEP_TABLE_JSON },
            404: NOT_FOUND,
            406: NOT_ACCEPTABLE,
            409: { description: 'the job has not finished (a sweep: ask with ?partial=1); a search that ended without a result (failed, or a hint cancelled)' },
          },
        },
      },
    },
    async (request, reply) => {
      const job = ctx.jobs.get(request.params.id);
      if (isSearch(job)) {
        const format = negotiate(request.headers.accept, searchFormats(job));
        const result = searchResult(job);
        if (format === 'json') return reply.type('application/json; charset=utf-8').send(result);
        return reply.type(TABLE_MEDIA_TYPES.arrow).send(sliced(capacityArrowPieces(result as CapacityResult)));
      }
      const format = negotiate(request.headers.accept);
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
          summary: "A job's results as the HTML report servesim report writes: a sweep's points finished so far; a capacity search's table of designs and its cost-against-capacity front, once it ends",
          responses: {
            200: { description: 'one self-contained HTML page', types: ['text/html'] },
            404: NOT_FOUND,
            409: { description: 'a capacity search not finished, or ended without a result; a hint search (no page of its own)' },
          },
        },
      },
    },
    async (request, reply) => {
      const job = ctx.jobs.get(request.params.id);
      if (isSearch(job)) {
        if (job.kind === 'hint') {
          throw new ServiceError('SERVESIM_JOB_NO_RESULT', 409, `job ${job.id} is a hint search, which has no page of its own: servesim report RESULTS.arrow --hint HINT.json draws it on a sweep's`);
        }
        return reply.type('text/html; charset=utf-8').send(renderCapacityReport(searchResult(job) as CapacityResult));
      }
      return reply.type('text/html; charset=utf-8').send(renderReport({ sweep: job.sweep, outcome: job.outcome() }));
    },
  );

  app.delete<{ Params: IdParams }>(
    '/v1/jobs/:id',
    {
      schema: params,
      config: {
        doc: {
          summary: "Cancel a job; a sweep's finished points stay, and a capacity search's settled designs (GET its result). A finished job is left as it is.",
          responses: { 200: { description: 'the job, once stopped', types: ['application/json'] }, 404: NOT_FOUND },
        },
      },
    },
    async (request) => (await ctx.jobs.cancel(request.params.id)).status(),
  );
}
