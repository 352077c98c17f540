/**
 * `servesim serve`: the HTTP service of src/service/. Ctrl-C or SIGTERM stops taking requests,
 * lets those in flight finish (background jobs are cancelled; with --queue they stay queued
 * for the next service), then closes the engines; a second Ctrl-C exits at once.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { loadQueueModule, parseQueueUrl } from '../queue/connection.js';
import { closeEngines } from '../run/run.js';
import { buildServer, DEFAULT_LIMITS } from '../service/server.js';
import { EXIT, parseInteger, untilStopped } from './options.js';
import type { CliIo } from './run-command.js';

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

function count(option: string, min: number, max = Number.MAX_SAFE_INTEGER): (text: string) => number {
  return (text) => parseInteger(text, option, min, max);
}

/** `--cors ORIGIN` (repeatable, or a comma list): exact origins, as a browser sends them. */
export function collectOrigins(text: string, previous: readonly string[] = []): readonly string[] {
  const origins = text.split(',').map((o) => o.trim());
  for (const origin of origins) {
    // an origin is scheme, host and port: a trailing slash or a path never matches a browser's
    if (URL.canParse(origin) && new URL(origin).origin === origin) continue;
    throw new InvalidArgumentError(`--cors takes origins such as http://localhost:8888 (scheme, host, port; no path), got '${origin}'.`);
  }
  return [...previous, ...origins];
}

/** `--queue redis://HOST:PORT`, for `serve` and `worker`. */
export function queueOption(description: string): Option {
  return new Option('--queue <url>', description).argParser((text) => {
    try {
      return parseQueueUrl(text);
    } catch (err) {
      throw new InvalidArgumentError(`${(err as Error).message}.`);
    }
  });
}

export function registerServe(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('serve')
    .description('serve sweeps (Arrow, JSON, CSV), background jobs, the shipped problems and hints over HTTP')
    .addOption(new Option('-p, --port <port>', 'port to listen on (0: any free port)').argParser(count('--port', 0, 65_535)).default(8080))
    .addOption(new Option('--host <host>', 'address to listen on (0.0.0.0: every interface)').default('127.0.0.1'))
    .addOption(
      new Option('--max-concurrent <n>', 'sweeps and hint searches running at once; more requests get 429, jobs queue')
        .argParser(count('--max-concurrent', 1, 1024))
        .default(DEFAULT_LIMITS.maxConcurrent),
    )
    .addOption(
      new Option('--sync-limit <instances>', 'largest sweep (points x cases x seeds) POST /v1/sweeps runs while the client waits')
        .argParser(count('--sync-limit', 1))
        .default(DEFAULT_LIMITS.syncMaxInstances),
    )
    .addOption(
      new Option('--max-instances <instances>', 'largest sweep taken at all (as a job)')
        .argParser(count('--max-instances', 1))
        .default(DEFAULT_LIMITS.maxInstances),
    )
    .addOption(
      new Option('--keep-jobs <n>', 'finished jobs kept in memory for their results')
        .argParser(count('--keep-jobs', 1))
        .default(DEFAULT_LIMITS.keepFinishedJobs),
    )
    .addOption(queueOption('run jobs on `servesim worker` processes through this Redis (docs/distributed.md)'))
    .addOption(
      new Option('--chunk-size <points>', 'with --queue: grid points per chunk (default: about 256 instances a chunk)')
        .argParser(count('--chunk-size', 1)),
    )
    .addOption(new Option('--cors <origins>', 'let pages from this origin call the API (a notebook, a dashboard); repeatable or a comma list').argParser(collectOrigins))
    .addHelpText(
      'after',
      '\nThe routes and their schemas: GET /openapi.json, as a page: GET /docs. Requests are logged to stderr.\n\n' +
        'Examples:\n' +
        '  servesim serve --port 8080\n' +
        "  curl -s localhost:8080/v1/sweeps -H 'content-type: application/json' -H 'accept: text/csv' \\\n" +
        '    -d \'{"problem": "mmc", "grid": {"server.slots": [4, 5]}, "seeds": 8}\'',
    )
    .action(async (opts: ServeOptionValues) => {
      setExit(await serve(opts, io));
    });
}

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
