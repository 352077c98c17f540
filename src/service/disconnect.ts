/**
 * A client that leaves before its answer is written cancels the work: the signal goes to
 * runSweep (and from there to the worker pool's tasks) or to the hint search.
 */
import type { FastifyReply } from 'fastify';

export interface DisconnectWatch {
  readonly signal: AbortSignal;
  /** Stops watching (the work is over). */
  dispose(): void;
}

export function watchDisconnect(reply: FastifyReply): DisconnectWatch {
  const controller = new AbortController();
  // the response's 'close' also follows a normal end: only an unfinished one means the client left
  const onClose = (): void => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.on('close', onClose);
  return { signal: controller.signal, dispose: () => void reply.raw.off('close', onClose) };
}
