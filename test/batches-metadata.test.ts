/**
 * `servesim.batches` lists every batch a sweep ran, however its table comes: an HTTP answer
 * (the Arrow stream, whose schema goes out after the first grid point, and Parquet), a job's
 * result (run by the server, or by a queue's workers) and the CLI's file. The batches'
 * instances sum to the instances the rows ran. Needs `npm run build` (the pool's workers, and
 * the queue's, run from dist/) and, for the queue, redis-server.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import type { FastifyInstance } from 'fastify';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { QueueDispatcher } from '../src/queue/dispatcher.js';
import type { BatchUsed } from '../src/run/batches.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { readSweepArrow } from '../src/sweep/arrow.js';
import { skipQueueTests, startRedis, startWorker, workerReady, type RedisServer, type WorkerProcess } from './queue-support.js';
import { parseEvents, TINY_QUEUE } from './support.js';

/**
 * 3 grid points x 2 cases x 4 seeds = 24 instances; the cases differ in shape (a failure's
 * target), so even one run of every point is two batches.
 */
const SWEEP = {
  problem: { ...TINY_QUEUE, cases: undefined, scenarios: { 'server-down': { failures: [{ target: 'server', replica: 0 }] } } },
  grid: { 'server.slots': [1, 2, 3] },
  cases: ['as-given', 'server-down'],
  seeds: 4,
  engine: 'cpu',
};
const INSTANCES = 24;

function batchesIn(metadata: ReadonlyMap<string, string> | undefined): BatchUsed[] {
  return JSON.parse(metadata?.get('servesim.batches') ?? 'null') as BatchUsed[];
}

/** Instances in the batches, and those the rows say they ran (each row's seeds). */
function counted(batches: readonly BatchUsed[], table: Table): { listed: number; ran: number } {
  return { listed: batches.reduce((sum, b) => sum + b.instances, 0), ran: [...table.getChild('seeds')!].reduce((sum: number, s) => sum + Number(s), 0) };
}

async function jobResult(app: FastifyInstance, accept?: string): Promise<{ body: Buffer; json: () => Record<string, any> }> {
  const created = await app.inject({ method: 'POST', url: '/v1/jobs', payload: SWEEP });
  expect(created.statusCode).toBe(202);
  const job = created.json();
  const events = parseEvents((await app.inject(job.links.events)).body);
  expect(events.at(-1)).toMatchObject({ event: 'done' });
  const result = await app.inject({ url: job.links.result, headers: accept === undefined ? {} : { accept } });
  expect(result.statusCode).toBe(200);
  return { body: result.rawPayload, json: () => result.json() };
}

afterAll(closeEngines);

describe('servesim.batches lists every batch', () => {
  let app: FastifyInstance;
  beforeAll(() => {
    app = buildServer({});
  });
  afterAll(() => app.close());

  it('in a streamed Arrow answer: its last record batch, as readSweepArrow reads it', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sweeps', payload: SWEEP });
    expect(res.statusCode).toBe(200);
    const table = tableFromIPC(res.rawPayload);
    // the first point ran alone, before the schema went out; then the other two
    const batches = batchesIn(table.batches.at(-1)!.metadata);
    expect(batches.map((b) => [b.instances, b.configs])).toEqual([[4, 1], [4, 1], [8, 2], [8, 2]]);
    expect(counted(batches, table)).toEqual({ listed: INSTANCES, ran: INSTANCES });
    const read = readSweepArrow(res.rawPayload, 'answer').table;
    expect(batchesIn(read.schema.metadata)).toEqual(batches);
    expect(read.schema.metadata.get('servesim.engine')).toBe('pool');
    expect(read.numRows).toBe(6);
  });

  it('in a Parquet answer', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sweeps', payload: SWEEP, headers: { accept: 'application/vnd.apache.parquet' } });
    const bytes = res.rawPayload;
    const metadata = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer);
    const batches = batchesIn(new Map(metadata.key_value_metadata?.map((kv) => [kv.key, kv.value ?? ''])));
    expect(batches.map((b) => b.instances)).toEqual([12, 12]);
  });

  it("in a job's result, as Arrow and as JSON", async () => {
    const arrow = tableFromIPC((await jobResult(app)).body);
    const batches = batchesIn(arrow.schema.metadata);
    expect(batches.map((b) => [b.instances, b.configs])).toEqual([[12, 3], [12, 3]]);
    expect(counted(batches, arrow)).toEqual({ listed: INSTANCES, ran: INSTANCES });
    const json = (await jobResult(app, 'application/json')).json();
    expect((json['meta'].batches as BatchUsed[]).map((b) => b.instances)).toEqual([12, 12]);
  });

  it("in the CLI's Arrow file", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'servesim-batches-'));
    writeFileSync(join(dir, 'sweep.json'), JSON.stringify(SWEEP));
    const unused = (): never => {
      throw new Error('not used by sweep');
    };
    const deps: ProgramDeps = { loadProblem: unused, selectCases: unused, runProblem: unused };
    const io: SweepIo = {
      stdout: { write: () => true, isTTY: false },
      stderr: { write: () => true, isTTY: false } as unknown as SweepIo['stderr'],
      onInterrupt: () => () => {},
    };
    const out = join(dir, 'results.arrow');
    expect(await main(['node', 'servesim', 'sweep', join(dir, 'sweep.json'), '--out', out], deps, io)).toBe(0);
    const table = tableFromIPC(readFileSync(out));
    expect(counted(batchesIn(table.schema.metadata), table)).toEqual({ listed: INSTANCES, ran: INSTANCES });
  });
});

describe.skipIf(skipQueueTests)("servesim.batches of a job on the queue lists every chunk's batches", () => {
  let redis: RedisServer;
  let worker: WorkerProcess;

  beforeAll(async () => {
    redis = await startRedis();
    worker = startWorker(redis.url);
    await workerReady(worker);
  });

  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await redis?.stop();
  });

  it('one chunk per point: two batches each', async () => {
    const queue = await QueueDispatcher.connect(redis.url, { chunkSize: 1, checkMs: 200 });
    const app = buildServer({ queue });
    try {
      const table = tableFromIPC((await jobResult(app)).body);
      const batches = batchesIn(table.schema.metadata);
      expect(batches.map((b) => b.instances)).toEqual([4, 4, 4, 4, 4, 4]);
      expect(counted(batches, table)).toEqual({ listed: INSTANCES, ran: INSTANCES });
    } finally {
      await app.close();
      await queue.close();
    }
  });
});
