/**
 * `servesim worker --queue redis://HOST:PORT`: runs chunks of the sweeps a `servesim serve
 * --queue` service puts on the queue, until Ctrl-C or SIGTERM; then it takes no more chunks
 * and finishes those in hand (a second Ctrl-C exits at once: the chunks go to other workers).
 */
import { loadQueueModule } from '../queue/connection.js';
import type { EngineChoice } from '../run/types.js';
import { EXIT, untilStopped } from './options.js';
import type { CliIo } from './run-command.js';

export interface WorkerOptionValues {
  readonly queue?: string;
  readonly engine: EngineChoice;
  readonly chunks?: number;
  readonly lockDuration: number;
}

/** Runs `worker` until Ctrl-C or SIGTERM; resolves to the exit status. */
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
