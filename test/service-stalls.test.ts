/**
 * No request the limits admit stalls the service: while each cheap request that once held its
 * event loop for seconds is answered, GET /healthz, asked every 50 ms, answers within 250 ms.
 * The clients and the probe run on another thread: this one is the server's. Needs `npm run
 * build` first (the pool's workers run from dist/).
 */
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { tableFromIPC } from 'apache-arrow';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep } from '../src/sweep/run.js';
import { ROWS_PER_BATCH } from '../src/sweep/table.js';

/**
 * Grid points of the large sweeps: enough that, before #30 (checking and compiling every point
 * at once, a record batch a point), this test's probes waited 1.4 to 7.5 s on a 2-core machine.
 */
const POINTS = 1000;

/** A problem whose instances are cheap (about ten arrivals): the grid's size is what costs. */
const TINY = {
  id: 'tiny',
  title: 'ten jobs',
  goals: { success: 0.9, p99: '1s' },
  traffic: { rate: 10, duration: '1s', warmup: '0s' },
  workload: { kind: 'job' },
  server: { replicas: 1, slots: 2, service: { dist: 'exponential', mean: '10ms' }, timeout: 0 },
  cases: ['as-given'],
};
/** POINTS grid points of one seed each. */
const GRID = { problem: TINY, grid: { 'traffic.rate': { from: 10, to: 10 + (POINTS - 1) / 2, step: 0.5 } }, seeds: 1, engine: 'cpu' };
/** A sweep that holds its slot until cancelled (the server's runner below). */
const HOLD = { id: 'hold', problem: 'mmc', grid: {}, seeds: 1 };

interface Request {
  readonly url: string;
  /** POSTed as JSON when given; else a GET. */
  readonly body?: unknown;
}

interface Answer {
  readonly status: number;
  readonly body: Uint8Array;
}

/**
 * The clients: a worker thread that sends the requests at once and, until they are all
 * answered, asks /healthz every 50 ms (its fetch warmed up by a first ask). It answers with the
 * slowest /healthz, in ms, and the answers.
 */
const CLIENTS = `
const { parentPort, workerData } = require('node:worker_threads');
const { base, requests } = workerData;
const ask = async () => {
  const start = performance.now();
  await (await fetch(base + '/healthz')).arrayBuffer();
  return performance.now() - start;
};
(async () => {
  await ask();
  let done = false;
  let worst = 0;
  const probing = (async () => {
    while (!done) {
      worst = Math.max(worst, await ask());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const answers = await Promise.all(requests.map(async ({ url, body }) => {
    const init = body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    const res = await fetch(base + url, init);
    return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
  }));
  done = true;
  await probing;
  parentPort.postMessage({ worst, answers }, answers.map((a) => a.body.buffer));
})();
`;

let app: FastifyInstance;
let base: string;

/** Sends `requests` from the clients' thread; the slowest /healthz meanwhile, and the answers. */
async function probed(...requests: Request[]): Promise<{ worst: number; answers: Answer[] }> {
  const clients = new Worker(CLIENTS, { eval: true, workerData: { base, requests } });
  try {
    return await new Promise((resolve, reject) => clients.once('message', resolve).once('error', reject));
  } finally {
    await clients.terminate();
  }
}

beforeAll(async () => {
  app = buildServer({
    runSweep: (sweep, options) =>
      sweep.id === HOLD.id
        ? new Promise((_resolve, reject) => options!.signal!.addEventListener('abort', () => reject(new Error('cancelled'))))
        : runSweep(sweep, options),
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  // the pool's threads start with the first sweep: not a request's cost
  expect((await probed({ url: '/v1/sweeps', body: { ...GRID, grid: {} } })).answers[0]!.status).toBe(200);
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

const json = (answer: Answer | undefined): any => JSON.parse(Buffer.from(answer!.body).toString());

describe('/healthz answers within 250 ms', () => {
  it(`while a ${POINTS.toLocaleString('en')}-point sweep is checked, run and streamed`, async () => {
    const { worst, answers } = await probed({ url: '/v1/sweeps', body: GRID });
    expect(answers[0]!.status).toBe(200);
    expect(tableFromIPC(answers[0]!.body).numRows).toBe(POINTS);
    expect(worst).toBeLessThan(250);
  });

  it('while 8 such sweeps are refused, busy, before their grids are checked', async () => {
    const { answers: holds } = await probed({ url: '/v1/jobs', body: HOLD }, { url: '/v1/jobs', body: HOLD });
    expect((await app.inject('/healthz')).json().sweeps.running).toBe(2);
    const { worst, answers } = await probed(...Array.from({ length: 8 }, () => ({ url: '/v1/sweeps', body: GRID })));
    await Promise.all(holds.map((hold) => app.inject({ method: 'DELETE', url: json(hold).links.self })));
    expect(answers.map((a) => json(a).code)).toEqual(Array(8).fill('SERVESIM_BUSY'));
    expect(worst).toBeLessThan(250);
  });

  it(`while three clients fetch a finished ${POINTS.toLocaleString('en')}-point job's table`, async () => {
    const job = json((await probed({ url: '/v1/jobs', body: GRID })).answers[0]);
    await new Promise<void>((resolve) => {
      const poll = async (): Promise<void> => ((await app.inject(job.links.self)).json().status === 'done' ? resolve() : void setTimeout(poll, 100));
      void poll();
    });
    const { worst, answers } = await probed(...Array.from({ length: 3 }, () => ({ url: job.links.result })));
    expect(worst).toBeLessThan(250);
    for (const answer of answers) {
      const table = tableFromIPC(answer.body);
      expect(table.numRows).toBe(POINTS);
      // a few large record batches, not one a grid point
      expect(table.batches).toHaveLength(Math.ceil(POINTS / ROWS_PER_BATCH));
    }
  });

  it('while a 1 MB body with a million-character GPU profile, then long unknown keys, is refused', async () => {
    const hot = parse(readFileSync('problems/hot-prefix.yaml', 'utf8')) as { gpu: Record<string, unknown> };
    hot.gpu['profile'] = 'x'.repeat(1_000_000);
    const keys = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`${i}${'k'.repeat(100_000)}`, 1]));
    for (const problem of [hot, { ...TINY, ...keys }]) {
      const { worst, answers } = await probed({ url: '/v1/sweeps', body: { problem, grid: {}, seeds: 1 } });
      expect(json(answers[0])).toMatchObject({ status: 400, code: 'SERVESIM_PROBLEM_INVALID' });
      expect(worst).toBeLessThan(250);
    }
  });
});
