/**
 * `servesim serve`: the HTTP service of src/service/. Ctrl-C or SIGTERM stops taking requests,
 * lets those in flight finish (background jobs are cancelled; with --queue they stay queued
 * for the next service), then closes the engines; a second Ctrl-C exits at once.
 */
import { loadQueueModule } from '../queue/connection.js';
import { closeEngines } from '../run/run.js';
import { buildServer } from '../service/server.js';
import { EXIT, untilStopped } from './options.js';
import type { CliIo } from './run-command.js';

// the parser is the command table's (program.ts), with the other option parsers
export { collectOrigins } from './options.js';

export interface ServeOptionValues {
  readonly port: number;
  readonly host: string;
  readonly maxConcurrent: number;
  readonly syncLimit: number;
  readonly maxInstances: number;
  readonly keepJobs: number;
  readonly queue?: string;
  readonly chunkSize?: number;
  readonly cors?: readonly string[];
}

/** Runs `serve` until Ctrl-C or SIGTERM; resolves to the exit status. */
export async function serve(opts: ServeOptionValues, io: CliIo): Promise<number> {
  // an unreachable Redis ends here, before the server listens
  const queue = opts.queue === undefined
    ? undefined
    : await (await loadQueueModule(() => import('../queue/dispatcher.js'))).QueueDispatcher.connect(opts.queue, {
        ...(opts.chunkSize === undefined ? {} : { chunkSize: opts.chunkSize }),
        log: (line) => void io.stderr.write(line),
      });
  const app = buildServer({
    ...(queue ? { queue } : {}),
    maxConcurrent: opts.maxConcurrent,
    syncMaxInstances: opts.syncLimit,
    maxInstances: opts.maxInstances,
    keepFinishedJobs: opts.keepJobs,
    ...(opts.cors ? { cors: opts.cors } : {}),
    logger: { level: 'info', stream: io.stderr },
  });
  let address: string;
  try {
    address = await app.listen({ port: opts.port, host: opts.host });
  } catch (err) {
    io.stderr.write(`servesim: cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}\n`);
    await app.close();
    await queue?.close();
    return EXIT.usage;
  }
  io.stderr.write(`servesim: serving on ${address} (routes: ${address}/openapi.json)${queue ? '; jobs go to the queue' : ''}\n`);

  const releaseInterrupt = await untilStopped(io);
  io.stderr.write('servesim: stopping: finishing the requests in flight\n');
  try {
    await app.close();
    await queue?.close();
    await closeEngines();
  } finally {
    releaseInterrupt();
  }
  return EXIT.ok;
}
