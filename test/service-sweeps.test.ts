/**
 * POST /v1/sweeps through fastify's inject (and one real socket for disconnects): the table in
 * each format, every class of bad input, the limits, and cancellation when the client leaves.
 * Needs `npm run build` first (the pool's workers run from dist/).
 */
import { request as httpRequest } from 'node:http';
import { tableFromIPC } from 'apache-arrow';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import type { SweepRunner } from '../src/service/streaming-run.js';
import { runSweep, type SweepOutcome } from '../src/sweep/run.js';
import { parquetReadObjects } from 'hyparquet';

/** Two quick points of the M/M/4 problem (one case), two seeds each. */
const SMALL = { problem: 'mmc', grid: { 'server.slots': [4, 5] }, seeds: 2 };
/**
 * A point that runs for many seconds (M/M/4 over 1,200 s, 4,096 seeds: 19 s on 2 threads;
 * 16 seeds over 3,900 s took 0.9 s, a race with a client leaving after 300 ms): a client leaving
 * within a second finds it running, and a run waited for rather than stopped goes past the bound
 * below. Short instances keep what the threads finish after a cancel (a slice each) small.
 */
const LONG = '1200s';
const LONG_SEEDS = 4096;

interface Recorded {
  readonly signal: AbortSignal;
  readonly outcome: Promise<SweepOutcome>;
}

/** A runner that records each run's signal and outcome. */
function recordingRunner(runs: Recorded[]): SweepRunner {
  return (sweep, options) => {
    const outcome = runSweep(sweep, options);
    runs.push({ signal: options!.signal!, outcome });
    return outcome;
  };
}

async function until(test: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

let app: FastifyInstance;
const runs: Recorded[] = [];

beforeAll(() => {
  app = buildServer({ runSweep: recordingRunner(runs) });
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

const post = (payload: unknown, accept?: string) =>
  app.inject({ method: 'POST', url: '/v1/sweeps', payload: payload as object, headers: accept ? { accept } : {} });

describe('POST /v1/sweeps answers the table', () => {
  it('as an Arrow stream by default, one record batch per grid point', async () => {
    const res = await post(SMALL);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/vnd.apache.arrow.stream');
    const table = tableFromIPC(res.rawPayload);
    expect(table.numRows).toBe(2);
    expect(table.batches).toHaveLength(2);
    expect(table.schema.fields.slice(0, 3).map((f) => f.name)).toEqual(['server.slots', 'case', 'seeds']);
    expect(table.getChild('server.slots')!.toArray()).toEqual(Int32Array.from([4, 5]));
    expect(table.schema.metadata.get('servesim.engine')).toBe('pool');
    expect(table.getChild('success')!.get(0)).toBeGreaterThan(0.9);
  });

  it('as JSON or CSV when Accept asks', async () => {
    const json = await post(SMALL, 'application/json');
    expect(json.statusCode).toBe(200);
    const body = json.json();
    expect(body.sweep).toMatchObject({ problem: 'mmc', grid: ['server.slots'], seeds: 2 });
    expect(body.rows.map((r: Record<string, unknown>) => [r['server.slots'], r['case']])).toEqual([[4, 'as-given'], [5, 'as-given']]);
    expect(body.unfinished).toEqual([]);

    const csv = await post(SMALL, 'text/csv;q=0.9, text/html');
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const lines = csv.body.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^server\.slots,case,seeds,/);
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 2).join(','))).toEqual(['4,as-given', '5,as-given']);
  });

  it("with seeds 'auto': each configuration takes seeds until decided, and the table says how many", async () => {
    // M/M/4 over 50 s: a p99 goal of 700 ms is met by about 80% of seeds (UNDECIDED at 32), 2 s by all
    const auto = { problem: 'mmc', grid: { 'traffic.duration': ['50s'], 'goals.p99': ['700ms', '2s'] }, seeds: 'auto', maxSeeds: 256 };
    const json = (await post(auto, 'application/json')).json();
    const rows = json.rows as Record<string, unknown>[];
    expect(rows.map((r) => r['verdict'])).toEqual(['FAIL', 'PASS']);
    expect(rows[0]!['seeds']).toBeGreaterThan(32);
    expect(rows[1]!['seeds']).toBe(64);
    const table = tableFromIPC((await post(auto)).rawPayload);
    expect(table.schema.metadata.get('servesim.seeds')).toBe('32');
    expect(table.schema.metadata.get('servesim.max_seeds')).toBe('256');
    expect(table.getChild('verdict')!.toArray()).toEqual(['FAIL', 'PASS']);
  });

  it('as Parquet when Accept asks', async () => {
    const res = await post(SMALL, 'application/vnd.apache.parquet');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/vnd.apache.parquet');
    const file = res.rawPayload.buffer.slice(res.rawPayload.byteOffset, res.rawPayload.byteOffset + res.rawPayload.byteLength) as ArrayBuffer;
    const rows = await parquetReadObjects({ file });
    expect(rows.map((r) => [r['server.slots'], r['case']])).toEqual([[4, 'as-given'], [5, 'as-given']]);
  });

  it('refuses an Accept it cannot meet with 406', async () => {
    const res = await post(SMALL, 'text/html');
    expect(res.statusCode).toBe(406);
    expect(res.json()).toMatchObject({ status: 406, code: 'SERVESIM_NOT_ACCEPTABLE', title: 'Not Acceptable' });
  });
});

describe('POST /v1/sweeps refuses bad input with the field and the reason', () => {
  const cases: [string, unknown, number, string, RegExp][] = [
    ['an unknown key', { ...SMALL, seedz: 3 }, 400, 'FST_ERR_VALIDATION', /body\.seedz: unknown field/],
    ['an unknown key in a range', { ...SMALL, grid: { 'server.slots': { from: 4, to: 5, step: 1, by: 1 } } }, 400, 'FST_ERR_VALIDATION', /body\.grid\["server\.slots"\].*by: unknown field/],
    ['a wrong type', { ...SMALL, seeds: '2' }, 400, 'FST_ERR_VALIDATION', /body\.seeds: fits none of its forms \(must be integer \| must be "auto"\)/],
    ['a missing field', { problem: 'mmc' }, 400, 'FST_ERR_VALIDATION', /body\.grid: required/],
    ['a value of neither form', { ...SMALL, grid: { 'server.slots': 4 } }, 400, 'FST_ERR_VALIDATION', /body\.grid\["server\.slots"\]: must be array or object/],
    ['a bad engine', { ...SMALL, engine: 'tpu' }, 400, 'FST_ERR_VALIDATION', /body\.engine: must be one of "auto", "cpu", "gpu"/],
    ['a bad grid path', { ...SMALL, grid: { 'server.slotz': [4] } }, 400, 'SERVESIM_SWEEP_INVALID', /server\.slotz: unknown field \(did you mean slots\?\)/],
    ['a bad grid value', { ...SMALL, grid: { 'server.slots': [4, 0] } }, 400, 'SERVESIM_SWEEP_INVALID', /grid point 1 \(server\.slots=0\).*server\.slots/],
    ['a backwards range', { ...SMALL, grid: { 'server.slots': { from: 5, to: 4, step: 1 } } }, 400, 'SERVESIM_SWEEP_INVALID', /to must be at least from/],
    ['an unknown problem id', { ...SMALL, problem: 'no-such-problem' }, 400, 'SERVESIM_SWEEP_INVALID', /problem: no shipped problem "no-such-problem"/],
    ['a problem path', { ...SMALL, problem: '../problems/mmc.yaml' }, 400, 'SERVESIM_SWEEP_INVALID', /problem: .* is not a shipped problem id/],
    ['an invalid inline problem', { ...SMALL, problem: { id: 'x' } }, 400, 'SERVESIM_PROBLEM_INVALID', /goals/],
    ['an unknown case', { ...SMALL, cases: ['rush-hour'] }, 400, 'SERVESIM_CASE_UNKNOWN', /rush-hour/],
  ];
  for (const [what, payload, status, code, message] of cases) {
    it(what, async () => {
      const res = await post(payload);
      expect(res.statusCode).toBe(status);
      const body = res.json();
      expect(body).toMatchObject({ status, code, title: 'Bad Request' });
      expect(body.detail).toMatch(message);
      // every field error also lists its fields, each issue naming its path
      if (code === 'FST_ERR_VALIDATION' || body.issues !== undefined) {
        expect(body.issues.length).toBeGreaterThan(0);
        for (const issue of body.issues) expect(issue.path).toMatch(/\S/);
      }
    });
  }

  it('text that is not JSON', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sweeps', headers: { 'content-type': 'application/json' }, payload: '{"problem": ' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('FST_ERR_CTP_INVALID_JSON_BODY');
  });

  it('a body over the limit (413)', async () => {
    const res = await post({ ...SMALL, title: 'x'.repeat(1024 * 1024) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ status: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE', title: 'Payload Too Large' });
  });

  it('a sweep over the synchronous limit: 413 pointing to /v1/jobs', async () => {
    const res = await post({ problem: 'mmc', grid: { 'server.slots': { from: 1, to: 40, step: 1 } }, seeds: 1000 });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('SERVESIM_GRID_TOO_LARGE');
    expect(res.json().detail).toMatch(/40,000 instances .* over the 20,000 .* POST the same body to \/v1\/jobs/);
  });

  it('a sweep over the absolute limit: 413 with the count and the limit', async () => {
    const small = buildServer({ maxInstances: 1000 });
    try {
      for (const url of ['/v1/sweeps', '/v1/jobs']) {
        const res = await small.inject({ method: 'POST', url, payload: { problem: 'mmc', grid: { 'server.slots': { from: 1, to: 40, step: 1 } }, seeds: 100 } });
        expect(res.statusCode).toBe(413);
        expect(res.json().detail).toMatch(/= 4,000 instances; the limit is 1,000 instances/);
      }
    } finally {
      await small.close();
    }
  });
});

describe('POST /v1/sweeps under load', () => {
  it('answers 429 with Retry-After when every slot is taken', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const busy = buildServer({ maxConcurrent: 1, retryAfterSeconds: 7, runSweep: async (sweep, options) => {
        await gate;
        return runSweep(sweep, options);
      },
    });
    try {
      const first = busy.inject({ method: 'POST', url: '/v1/sweeps', payload: SMALL, headers: { accept: 'application/json' } });
      await until(async () => (await busy.inject('/healthz')).json().sweeps.running === 1);
      const second = await busy.inject({ method: 'POST', url: '/v1/sweeps', payload: SMALL });
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('7');
      expect(second.json()).toMatchObject({ code: 'SERVESIM_BUSY', title: 'Too Many Requests' });
      open();
      expect((await first).statusCode).toBe(200);
      expect((await busy.inject('/healthz')).json().sweeps.running).toBe(0);
    } finally {
      open();
      await busy.close();
    }
  });
});

describe('a client that leaves cancels its sweep', () => {
  let base: string;
  beforeAll(async () => {
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  /** POSTs `body` on a real socket; `leave` gets the request to destroy when it decides. */
  function postAndLeave(body: unknown, leave: (req: ReturnType<typeof httpRequest>) => void): void {
    const req = httpRequest(`${base}/v1/sweeps`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => {});
    req.end(JSON.stringify(body));
    leave(req);
  }

  async function freed(): Promise<void> {
    await until(async () => (await app.inject('/healthz')).json().sweeps.running === 0);
    // the pool takes new work at once
    expect((await post(SMALL, 'application/json')).statusCode).toBe(200);
  }

  it('while waiting for the first point', async () => {
    const before = runs.length;
    const started = Date.now();
    postAndLeave({ problem: 'mmc', grid: { 'traffic.duration': [LONG] }, seeds: LONG_SEEDS }, (req) => setTimeout(() => req.destroy(), 300));
    await until(async () => runs.length > before);
    const run = runs[before]!;
    const outcome = await run.outcome;
    expect(run.signal.aborted).toBe(true);
    expect(outcome).toMatchObject({ cancelled: true, finished: [], unfinished: [0] });
    // the whole point takes seconds: its tasks were stopped, not waited for
    expect(Date.now() - started).toBeLessThan(5000);
    await freed();
  });

  it('after the first Arrow bytes', async () => {
    const before = runs.length;
    postAndLeave({ problem: 'mmc', grid: { 'traffic.duration': ['20s', LONG, LONG] }, seeds: LONG_SEEDS }, (req) =>
      req.on('response', (res) => res.once('data', () => req.destroy())),
    );
    // the first point runs alone (for the schema's meta), then the rest in a second run
    await until(async () => runs.length > before + 1);
    const [head, tail] = [await runs[before]!.outcome, await runs[before + 1]!.outcome];
    expect(head.finished).toEqual([0]);
    expect(runs[before + 1]!.signal.aborted).toBe(true);
    expect(tail).toMatchObject({ cancelled: true, finished: [] });
    expect(tail.unfinished).toEqual([1, 2]);
    await freed();
  });
});
