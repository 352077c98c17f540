/**
 * Searches as background jobs: POST /v1/jobs/hints (the hint search of POST /v1/hints) and POST
 * /v1/jobs/capacity (each design's highest passing load, as `servesim capacity`). A body is read
 * and checked once, as the CLI's request is (src/hint, src/capacity: planHints, planCapacity),
 * and refused before any work: 400 for bad input, 413 past the limits, 429 when the server has
 * as many jobs as it takes. The job then runs as a sweep job does (src/service/jobs.ts): it waits
 * for an engine slot, reports progress on GET /v1/jobs/{id}/events, and is cancelled by DELETE.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { CapacityProgress, CapacityRequest, CapacityResult } from '../capacity/api.js';
import { MAX_DESIGNS } from '../capacity/api.js';
import { planCapacity, searchCapacity } from '../capacity/search.js';
import type { HintProgress, HintRequest, HintResult } from '../hint/api.js';
import { planHints, searchHints } from '../hint/search.js';
import type { Verdict } from '../model/verdict.js';
import type { Sweep } from '../sweep/spec.js';
import type { ServiceContext } from './context.js';
import type { Search, SearchJob } from './jobs.js';
import { checkGridPoints } from './routes-hints.js';
import { capacityBodySchema, hintBodySchema } from './schemas.js';

/** A hint job's progress event: the point just evaluated, and how many are undecided now. */
export interface HintJobProgress extends HintProgress {
  /** Points whose last evaluation left them UNDECIDED (within seed noise at the seeds they took). */
  readonly undecided: number;
}

const CREATED = { description: 'the job: {id, kind, status, problem, designs, progress, links, ...}; Location names it', types: ['application/json'] };

function subject(sweep: Sweep): Pick<Search<unknown, unknown>, 'problem' | 'designs'> {
  return { problem: { id: sweep.problem.id, title: sweep.problem.title }, designs: sweep.points.length };
}

export function registerSearchRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const created = (job: SearchJob<unknown, unknown>, reply: FastifyReply): FastifyReply =>
    reply.code(202).header('location', job.status().links.self).send(job.status());

  app.post(
    '/v1/jobs/hints',
    {
      schema: { body: hintBodySchema },
      config: {
        doc: {
          summary: 'Start a hint search in the background: progress events a point at a time (the round, seeds taken, points undecided), then the result of POST /v1/hints',
          responses: {
            202: CREATED,
            413: { description: 'a grid over the points limit, or whose first seeds on every point are over the instance limit; a body too large, too deep or with too many keys' },
            429: { description: 'too many jobs queued or running; see Retry-After' },
          },
        },
      },
    },
    async (request, reply) => {
      const body = request.body as HintRequest;
      checkGridPoints(body.vary, ctx.limits.maxGridPoints);
      // a job's search may ask for as much at once as a sweep job may run
      const maxInstances = ctx.limits.maxInstances;
      const plan = await planHints(body, { maxInstances, checkSize: () => ctx.jobs.checkRoom() });
      const verdicts = new Map<string, Verdict>();
      const job = ctx.jobs.createSearch<HintResult, HintJobProgress>({
        kind: 'hint',
        ...subject(plan.sweep),
        run: (signal, onProgress) =>
          searchHints(plan, {
            signal,
            maxInstances,
            onProgress: (progress) => {
              verdicts.set(JSON.stringify(progress.values), progress.verdict);
              onProgress({ ...progress, undecided: [...verdicts.values()].filter((v) => v === 'UNDECIDED').length });
            },
          }),
      });
      return created(job, reply);
    },
  );

  app.post(
    '/v1/jobs/capacity',
    {
      schema: { body: capacityBodySchema },
      config: {
        doc: {
          summary: 'Start a capacity search in the background: each design\'s highest load that passes every case, progress a round at a time; a cancelled search keeps the designs it settled',
          responses: {
            202: CREATED,
            413: { description: `more designs than the limit (${MAX_DESIGNS.toLocaleString('en')}, or the server's grid points limit if lower); a body too large, too deep or with too many keys` },
            429: { description: 'too many jobs queued or running; see Retry-After' },
          },
        },
      },
    },
    async (request, reply) => {
      const body = request.body as CapacityRequest;
      checkGridPoints(body.vary, Math.min(MAX_DESIGNS, ctx.limits.maxGridPoints));
      const plan = await planCapacity(body, { checkSize: () => ctx.jobs.checkRoom() });
      const job = ctx.jobs.createSearch<CapacityResult, CapacityProgress>({
        kind: 'capacity',
        ...subject(plan.sweep),
        // cancelling stops the search: it resolves with the designs it settled
        run: (signal, onProgress) => searchCapacity(plan, { stop: signal, onProgress }),
      });
      return created(job, reply);
    },
  );
}
