/**
 * The HTTP service: `buildServer` wires the routes to one engine-slot semaphore, one job
 * registry and one error policy. `servesim serve` listens with it; tests use `inject`.
 */
import { Socket } from 'node:net';
import fastifyCors from '@fastify/cors';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { ServesimError } from '../errors.js';
import { runHints } from '../hint/search.js';
import { shapeExcess } from '../problem/bounds.js';
import { profileCatalogue } from '../problem/profiles.js';
import { runSweep } from '../sweep/run.js';
import { ProblemCatalog } from './catalog.js';
import { DEFAULT_LIMITS, type HintRunner, type ServiceContext, type ServiceLimits } from './context.js';
import { registerDocs } from './docs.js';
import { clientErrorHandler, formatSchemaErrors, frameworkErrors, installErrorHandlers } from './errors.js';
import { JobRegistry, type JobDispatcher } from './jobs.js';
import { registerOpenApi } from './openapi.js';
import { registerHealthRoute } from './routes-health.js';
import { registerHintRoute } from './routes-hints.js';
import { registerJobRoutes } from './routes-jobs.js';
import { registerProblemRoutes } from './routes-problems.js';
import { registerProfileRoutes } from './routes-profiles.js';
import { registerSearchRoutes } from './routes-searches.js';
import { registerSweepRoutes } from './routes-sweeps.js';
import { Slots } from './slots.js';
import type { SweepRunner } from './streaming-run.js';

export { DEFAULT_LIMITS, type ServiceLimits } from './context.js';

export interface ServiceOptions extends Partial<ServiceLimits> {
  readonly logger?: FastifyServerOptions['logger'];
  /** How sweeps run (default runSweep); tests wrap it to watch the signal. */
  readonly runSweep?: SweepRunner;
  /** How hint searches run (default runHints). */
  readonly runHints?: HintRunner;
  /**
   * Where jobs' sweeps run instead of this server's engines (`serve --queue`: a BullMQ queue,
   * src/queue). The caller connects and closes it; the server takes up the jobs it finds
   * unfinished when it starts, and leaves its own running there when it stops.
   */
  readonly queue?: JobDispatcher;
  /** Origins whose pages may call the service (`serve --cors`); none by default. */
  readonly cors?: readonly string[];
}

export function buildServer(options: ServiceOptions = {}): FastifyInstance {
  const limits: ServiceLimits = {
    bodyLimit: options.bodyLimit ?? DEFAULT_LIMITS.bodyLimit,
    maxConcurrent: options.maxConcurrent ?? DEFAULT_LIMITS.maxConcurrent,
    syncMaxInstances: options.syncMaxInstances ?? DEFAULT_LIMITS.syncMaxInstances,
    maxInstances: options.maxInstances ?? DEFAULT_LIMITS.maxInstances,
    maxGridPoints: options.maxGridPoints ?? DEFAULT_LIMITS.maxGridPoints,
    keepFinishedJobs: options.keepFinishedJobs ?? DEFAULT_LIMITS.keepFinishedJobs,
    maxActiveJobs: options.maxActiveJobs ?? DEFAULT_LIMITS.maxActiveJobs,
    retryAfterSeconds: options.retryAfterSeconds ?? DEFAULT_LIMITS.retryAfterSeconds,
  };
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: limits.bodyLimit,
    // a "__proto__" key stays an own key, for the schemas to refuse by name (a grid key, a case
    // name); fastify's default refuses the whole body as "not valid JSON", naming nothing
    onProtoPoisoning: 'ignore',
    // fastify's defaults drop unknown keys and turn "8" into 8: a typo must be an error instead
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allowUnionTypes: true } },
    schemaErrorFormatter: formatSchemaErrors,
    frameworkErrors,
    clientErrorHandler,
  });
  installErrorHandlers(app);
  app.addHook('preValidation', async (request) => {
    // before the schema walks it: a body of 90,000 keys would otherwise be validated key by key
    const excess = shapeExcess(request.body);
    if (excess !== undefined) throw new ServesimError('SERVESIM_INPUT_TOO_LARGE', excess, 'body');
  });
  // before the routes: it collects them as they are added
  const openApi = registerOpenApi(app);
  if (options.cors !== undefined && options.cors.length > 0) {
    // DELETE cancels a job; a page reads a new job's Location and a 429's Retry-After only if exposed
    void app.register(fastifyCors, { origin: [...options.cors], methods: ['GET', 'HEAD', 'POST', 'DELETE'], exposedHeaders: ['location', 'retry-after'] });
  }

  const run = options.runSweep ?? runSweep;
  const slots = new Slots(limits.maxConcurrent);
  const ctx: ServiceContext = {
    limits,
    slots,
    jobs: new JobRegistry({
      slots,
      run,
      keepFinished: limits.keepFinishedJobs,
      maxActive: limits.maxActiveJobs,
      retryAfterSeconds: limits.retryAfterSeconds,
      ...(options.queue ? { dispatcher: options.queue } : {}),
    }),
    problems: new ProblemCatalog(),
    runSweep: run,
    runHints: options.runHints ?? runHints,
  };
  registerHealthRoute(app, ctx);
  registerProblemRoutes(app, ctx);
  registerProfileRoutes(app);
  registerSweepRoutes(app, ctx);
  registerJobRoutes(app, ctx);
  registerHintRoute(app, ctx);
  registerSearchRoutes(app, ctx);
  registerDocs(app, openApi);
  // the GPU profile catalogue is read (YAML) once: before the first request, not during it
  app.addHook('onReady', async () => void profileCatalogue());
  const { queue } = options;
  if (queue !== undefined) {
    app.addHook('onReady', async () => {
      for (const job of await queue.unfinished()) ctx.jobs.adopt(job.id, job.sweep, job.createdAt);
    });
  }
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    queue?.detach();
    // jobs would keep their event streams, and so close(), waiting: nobody will read them now
    await ctx.jobs.cancelAll();
  });
  // server.close() ends only the connections idle when it is called; a keep-alive connection
  // whose answer ends later would hold the process for the keep-alive timeout
  app.addHook('onResponse', async (request) => {
    const { socket } = request.raw;
    // inject() answers come with a stand-in socket: no connection to end
    if (closing && socket instanceof Socket) socket.end();
  });
  return app;
}
