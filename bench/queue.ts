/**
 * `npm run bench:queue`: one sweep run locally and through the queue (`serve --queue` and 1, 2
 * and 4 `servesim worker` processes on this machine, a private redis-server on loopback), at
 * several chunk sizes. Prints a Markdown table and writes bench/results/queue.md.
 *
 * With one worker nothing runs in parallel, so everything beyond the local time is the queue's:
 * per job (enqueueing, the last chunk's result, removing the chunks) and per chunk (Redis
 * round trips, the payload, the worker's parsing). A straight line through (chunks, queue time
 * - local time) at the chunk sizes measured splits the two. Each worker is warmed up first.
 * Asserts nothing.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { packageVersion } from '../src/version.js';
import { QueueDispatcher } from '../src/queue/dispatcher.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { startRedis, startWorker, workerReady } from './local-queue.js';
import { machine } from './measure.js';

const root = new URL('../../', import.meta.url);

/** 60 small points (about 25 ms each on a 2-core CPU pool), so that small chunks show the cost. */
const SWEEP = {
  problem: 'mmc',
  grid: { 'server.slots': [4, 5, 6, 7, 8, 9], 'traffic.rate': { from: 20, to: 38, step: 2 } },
  seeds: 4,
};
const CHUNK_SIZES = [1, 2, 4, 8, 16];
const WORKERS = [1, 2, 4];
/** Runs of each configuration; the fastest counts (the machine's noise only adds time). */
const REPEATS = 3;

interface Row {
  chunkSize: number;
  chunks: number;
  workers: number;
  seconds: number;
}

/** Seconds from POST /v1/jobs to the job's final event. */
async function queued(url: string, chunkSize: number, body: object): Promise<number> {
  const queue = await QueueDispatcher.connect(url, { chunkSize });
  const app = buildServer({ queue });
  try {
    const started = performance.now();
    const job = (await app.inject({ method: 'POST', url: '/v1/jobs', payload: body })).json();
    const events = (await app.inject(job.links.events)).body;
    const seconds = (performance.now() - started) / 1000;
    if (!events.includes('event: done')) throw new Error(`job did not finish: ${events.slice(-400)}`);
    return seconds;
  } finally {
    await app.close();
    await queue.close();
  }
}

/** Least squares y = intercept + slope x. */
function fitLine(points: readonly (readonly [number, number])[]): { slope: number; intercept: number } {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const slope = sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

async function main(): Promise<void> {
  const sweep = sweepFromObject(SWEEP);
  const instancesPerPoint = sweep.caseNames.length * sweep.seeds;
  const redis = await startRedis();
  redis.client.disconnect(); // the dispatcher and workers open their own
  const rows: Row[] = [];
  let local = Number.POSITIVE_INFINITY;
  try {
    await runSweep(sweep); // warm the pool
    for (let r = 0; r < REPEATS; r++) {
      const started = performance.now();
      await runSweep(sweep);
      local = Math.min(local, (performance.now() - started) / 1000);
    }
    await closeEngines();
    process.stderr.write(`local: ${local.toFixed(2)} s\n`);

    for (const workers of WORKERS) {
      const children = Array.from({ length: workers }, () => startWorker(redis.url));
      await Promise.all(children.map(workerReady));
      try {
        // every worker's pool warm: a chunk of one point each, several times over
        await queued(redis.url, 1, { ...SWEEP, grid: { 'server.slots': Array.from({ length: workers * 3 }, (_, i) => 4 + i) } });
        for (const chunkSize of CHUNK_SIZES) {
          let best = Number.POSITIVE_INFINITY;
          for (let r = 0; r < REPEATS; r++) best = Math.min(best, await queued(redis.url, chunkSize, SWEEP));
          const row = { chunkSize, chunks: Math.ceil(sweep.points.length / chunkSize), workers, seconds: best };
          rows.push(row);
          process.stderr.write(`${workers} worker(s), ${chunkSize} point(s) a chunk: ${best.toFixed(2)} s\n`);
        }
      } finally {
        await Promise.all(children.map((w) => w.stop()));
      }
    }
  } finally {
    await redis.stop();
  }

  const points = sweep.points.length;
  const lines = [
    '| points a chunk | instances a chunk | work a chunk | chunks | workers | seconds | points/s | vs local | queue cost a chunk | queue cost |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| (local, no queue) | | | | | ${local.toFixed(2)} | ${(points / local).toFixed(1)} | 1.00 | | |`,
  ];
  for (const r of rows) {
    // only one worker isolates the queue's cost: with more, they share the same two cores
    const cost = r.workers === 1 ? `${(((r.seconds - local) / r.chunks) * 1000).toFixed(1)} ms` : '';
    const share = r.workers === 1 ? `${(((r.seconds - local) / local) * 100).toFixed(1)}%` : '';
    lines.push(
      `| ${r.chunkSize} | ${r.chunkSize * instancesPerPoint} | ${(((local / points) * r.chunkSize) * 1000).toFixed(0)} ms | ${r.chunks} | ${r.workers} | ${r.seconds.toFixed(2)} | ${(points / r.seconds).toFixed(1)} | ${(local / r.seconds).toFixed(2)} | ${cost} | ${share} |`,
    );
  }
  const single = rows.filter((r) => r.workers === 1);
  const { slope, intercept } = fitLine(single.map((r) => [r.chunks, r.seconds - local]));
  const under = single.find((r) => (r.seconds - local) / local < 0.05);
  const verdict = [
    `Fit over the one-worker rows: the queue costs ${(slope * 1000).toFixed(1)} ms a chunk and ${(intercept * 1000).toFixed(0)} ms a job, ` +
      `so a chunk of more than ${(slope * 20 * 1000).toFixed(0)} ms of work keeps its cost under 5%.`,
    under
      ? `Measured: under 5% from ${under.chunkSize} point(s) (${under.chunkSize * instancesPerPoint} instances, about ${((local / points) * under.chunkSize * 1000).toFixed(0)} ms of work) a chunk.`
      : 'Measured: 5% or more at every chunk size here.',
  ].join(' ');
  const header = [
    '# Queue benchmark',
    '',
    `servesim ${packageVersion()} · ${machine()}, Redis ${redis.version} on loopback · ${new Date().toISOString()}`,
    '',
    'Command: `npm run bench:queue`',
    '',
    `Sweep: problems/mmc.yaml, ${points} grid points (server.slots x traffic.rate), 1 case, ${sweep.seeds} seeds; CPU pool on every side; fastest of ${REPEATS} runs.`,
    '',
  ];
  const note =
    `Each worker's pool has one thread a core (${availableParallelism()} here): one worker already fills the machine, so rows with ` +
    'more workers show what the queue costs when they compete for the same cores, not how it scales across machines.';
  const text = [...header, ...lines, '', verdict, '', note, ''].join('\n');
  process.stdout.write(`${text}\n`);
  const out = new URL('bench/results/', root);
  mkdirSync(out, { recursive: true });
  writeFileSync(new URL('queue.md', out), text);
}

await main();
