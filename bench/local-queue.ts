/**
 * The distributed queue on one machine: a private redis-server on a free loopback port (no
 * files, no persistence) and `servesim worker` child processes, for the queue's benchmark
 * (bench/queue.ts) and its tests (test/queue-support.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

// the built bin, whether this module runs from bench/ (tests) or from dist/bench/
export const MAIN = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../dist/src/cli/main.js' : '../src/cli/main.js', import.meta.url));
export const REDIS_SERVER = 'redis-server';

const probe = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' });
export const redisAvailable = probe.status === 0;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function until(test: () => boolean | Promise<boolean>, timeoutMs = 30_000, what: string | (() => string) = 'a condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface RedisServer {
  readonly url: string;
  /** As `redis-server --version` says ("7.0.15"). */
  readonly version: string;
  /** A client for the caller's own looks at the keys. */
  readonly client: Redis;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  if (!redisAvailable) throw new Error(`${REDIS_SERVER} is not installed (apt-get install redis-server; .ci/run installs it)`);
  const port = await freePort();
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  await until(
    async () => {
      try {
        if (client.status === 'wait' || client.status === 'end') await client.connect();
        return (await client.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    10_000,
    'redis-server to answer',
  );
  return {
    url,
    version: /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown',
    client,
    async stop() {
      client.disconnect();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** What it wrote to stderr so far. */
  readonly log: () => string;
  /** SIGTERM (finish the chunks in hand), or SIGKILL; resolves on exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `servesim worker` as its own process, as it runs on a worker machine. */
export function startWorker(url: string, args: readonly string[] = []): WorkerProcess {
  const child = spawn(process.execPath, [MAIN, 'worker', '--queue', url, '--engine', 'cpu', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (chunk) => (log += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    log: () => log,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function workerReady(worker: WorkerProcess): Promise<void> {
  await until(() => worker.log().includes('taking chunks'), 20_000, () => `a worker to start (its log: ${worker.log()})`);
}
