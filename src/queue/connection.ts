/**
 * Redis for the distributed sweep (`--queue redis://HOST:PORT`): the URL, the keys servesim
 * keeps beside BullMQ's, and connections that fail fast at start-up instead of retrying for
 * ever against a Redis that is not there.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { ServesimError } from '../errors.js';
import { installMessage, isMissingPackage } from '../optional-package.js';

// bullmq and ioredis are optional dependencies: loaded when the queue is first used
const requireHere = createRequire(import.meta.url);

/**
 * Loads a module of the queue (`() => import('./dispatcher.js')`), saying which packages to
 * install when bullmq or ioredis is missing.
 */
export async function loadQueueModule<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (!isMissingPackage(err, 'bullmq') && !isMissingPackage(err, 'ioredis')) throw err;
    throw new ServesimError('SERVESIM_QUEUE_UNREACHABLE', installMessage('--queue', ['bullmq', 'ioredis']));
  }
}

/** BullMQ's key prefix and queue name: the chunk jobs live under `servesim:chunks:*`. */
export const QUEUE_PREFIX = 'servesim';
export const CHUNK_QUEUE = 'chunks';

// the worker's defaults, here so that `servesim worker --help` shows them without loading bullmq
/** Chunks held at once on the CPU pool and on a GPU. */
export const CPU_CHUNKS = 1;
export const GPU_CHUNKS = 4;
/** BullMQ's default: a chunk whose worker stops renewing its lock is taken up again after this. */
export const DEFAULT_LOCK_MS = 30_000;

/** How long start-up waits for Redis to answer before giving up. */
export const CONNECT_TIMEOUT_MS = 3000;

/** A sweep's record: its spec, chunking and state (`running` until it settles). */
export function sweepKey(jobId: string): string {
  return `${QUEUE_PREFIX}:sweep:${jobId}`;
}

/** Job ids of the sweeps still being assembled: a new service takes them up. */
export const RUNNING_SWEEPS_KEY = `${QUEUE_PREFIX}:sweeps`;
/** Job ids of settled sweeps whose chunk jobs are still to be removed. */
export const CLEANUP_KEY = `${QUEUE_PREFIX}:cleanup`;

export type SweepState = 'running' | 'done' | 'failed' | 'cancelled';

/** `redis://[user:pass@]host[:port][/db]` or `rediss://...`; anything else throws. */
export function parseQueueUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // reported below
  }
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    throw new Error(`--queue must be redis://HOST:PORT, got '${text}'`);
  }
  return text;
}

/** The URL without a password, for messages and logs. */
export function redactUrl(text: string): string {
  const url = new URL(text);
  if (url.password !== '') url.password = '***';
  return url.toString();
}

/**
 * A client that is not connected yet. `blocking` clients are for BullMQ's workers and event
 * readers (which duplicate them): BullMQ needs maxRetriesPerRequest null there. The others
 * are for the service's own commands, which should fail rather than queue while Redis is down.
 */
export function redisClient(url: string, options: { blocking: boolean }): Redis {
  const { Redis: RedisClient } = requireHere('ioredis') as typeof import('ioredis');
  const client = new RedisClient(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: options.blocking ? null : 2,
    enableOfflineQueue: options.blocking,
    retryStrategy: reconnectDelay,
    // how long a closing socket may wait for the server's side (default 2 s holds the process)
    disconnectTimeout: 200,
  });
  // ioredis prints unhandled 'error' events; BullMQ's own listeners report what matters
  client.on('error', () => {});
  return client;
}

/** Once running, a Redis restart is waited out. */
function reconnectDelay(times: number): number {
  return Math.min(200 * times, 5000);
}

/**
 * Connects and checks that Redis answers PING within CONNECT_TIMEOUT_MS: a refused port, an
 * unknown host or a server that never answers all end in SERVESIM_QUEUE_UNREACHABLE.
 */
export async function connectRedis(url: string, options: { blocking: boolean }): Promise<Redis> {
  const client = redisClient(parseQueueUrl(url), options);
  // at start-up the first failure is the answer: no retries
  client.options.retryStrategy = () => null;
  let lastError: Error | undefined;
  client.on('error', (err: Error) => (lastError = err));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
  });
  try {
    await Promise.race([
      (async () => {
        await client.connect();
        const pong = await client.ping();
        if (pong !== 'PONG') throw new Error(`PING answered ${JSON.stringify(pong)}`);
      })(),
      timeout,
    ]);
    client.options.retryStrategy = reconnectDelay;
    return client;
  } catch (err) {
    // on a socket already closed, disconnect() would hold the process for its 2 s grace timer
    if (client.status !== 'end') client.disconnect();
    // ioredis rejects with "Connection is closed."; the socket's error says why
    const why = (lastError ?? (err instanceof Error ? err : new Error(String(err)))).message;
    throw new ServesimError('SERVESIM_QUEUE_UNREACHABLE', `cannot reach Redis at ${redactUrl(url)}: ${why}`);
  } finally {
    clearTimeout(timer);
  }
}
