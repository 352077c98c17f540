/**
 * `servesim worker --queue redis://HOST:PORT`: runs chunks of the sweeps a `servesim serve
 * --queue` service puts on the queue, until Ctrl-C or SIGTERM; then it takes no more chunks
 * and finishes those in hand (a second Ctrl-C exits at once: the chunks go to other workers).
 */
import { Option, type Command } from 'commander';
import { CPU_CHUNKS, DEFAULT_LOCK_MS, GPU_CHUNKS, loadQueueModule } from '../queue/connection.js';
import type { EngineChoice } from '../run/types.js';
import { ENGINE_CHOICES, EXIT, parseEngine, parseInteger, untilStopped } from './options.js';
import type { CliIo } from './run-command.js';
import { queueOption } from './serve-command.js';

export interface WorkerOptionValues {
  readonly queue?: string;
  readonly engine: EngineChoice;
  readonly chunks?: number;
  readonly lockDuration: number;
}

export function registerWorker(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('worker')
    .description('run grid points of the sweeps a `servesim serve --queue` service distributes')
    .addOption(queueOption('the Redis the service queues chunks on').makeOptionMandatory())
    .addOption(new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')}`).argParser(parseEngine).default('auto'))
    .addOption(
      new Option('--chunks <n>', `chunks held at once (default: ${CPU_CHUNKS} on the CPU pool, ${GPU_CHUNKS} on a GPU)`)
        .argParser((text) => parseInteger(text, '--chunks', 1, 64)),
    )
    .addOption(
      new Option('--lock-duration <ms>', "a chunk this worker stops renewing (it died) goes to another after this long; set it on every worker alike")
        .argParser((text) => parseInteger(text, '--lock-duration', 100, 3_600_000))
        .default(DEFAULT_LOCK_MS),
    )
    .addHelpText(
      'after',
      '\nResults are the same on any engine; the engine only decides how fast. See docs/distributed.md.\n\n' +
        'Examples:\n' +
        '  servesim worker --queue redis://10.0.0.5:6379\n' +
        '  servesim worker --queue redis://10.0.0.5:6379 --engine gpu',
    )
    .action(async (opts: WorkerOptionValues) => {
      setExit(await work(opts, io));
    });
}

export async function work(opts: WorkerOptionValues, io: CliIo): Promise<number> {
  const { ChunkWorker } = await loadQueueModule(() => import('../queue/worker.js'));
  const worker = await ChunkWorker.start({
    url: opts.queue!,
    engine: opts.engine,
    ...(opts.chunks === undefined ? {} : { chunks: opts.chunks }),
    lockDuration: opts.lockDuration,
    log: (line) => void io.stderr.write(line),
  });
  const releaseInterrupt = await untilStopped(io);
  io.stderr.write('servesim worker: stopping: finishing the chunks in hand\n');
  try {
    await worker.close();
  } finally {
    releaseInterrupt();
  }
  return EXIT.ok;
}
