/**
 * For the queue tests: the private redis-server and worker processes of bench/local-queue.ts.
 * Without redis-server the tests skip, except under CI (env CI set), where they fail.
 */
import { redisAvailable } from '../bench/local-queue.js';

export { freePort, MAIN, startRedis, startWorker, until, workerReady, type RedisServer, type WorkerProcess } from '../bench/local-queue.js';

/** Skip without redis-server, but only off CI. */
export const skipQueueTests = !redisAvailable && !process.env['CI'];
