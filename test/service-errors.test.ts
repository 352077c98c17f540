/**
 * Every HTTP error is an RFC 9457 problem document, and the OpenAPI document lists every status
 * each route answers. The statuses are not a hand list: every documented route is provoked in
 * every way a client or the engines can (each code of the errors catalogue thrown by the
 * runners, a bug, a busy server, fastify's own refusals) and whatever it answers must be listed.
 * The runners are stubs: no engine runs.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS, ServesimError, type ErrorCode } from '../src/errors.js';
import { buildServer } from '../src/service/server.js';
import type { SweepRunner } from '../src/service/streaming-run.js';

/** What the stub runners do now: fail with this error, or run until cancelled. */
let runnerDoes: Error | 'hang' = new Error('not set');

function stubRun(signal: AbortSignal | undefined): Promise<never> {
  if (runnerDoes !== 'hang') return Promise.reject(runnerDoes);
  return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new ServesimError('SERVESIM_CANCELLED', 'cancelled'))));
}

const SWEEP = { problem: 'mmc', grid: { 'server.slots': [4] }, cases: ['as-given'], seeds: 1 };

/** A request each documented route answers with success, `{id}` filled in later. */
const EXAMPLES: Record<string, { body?: object; id?: 'job' | 'problem' }> = {
  'GET /openapi.json': {},
  'GET /healthz': {},
  'GET /v1/problems': {},
  'GET /v1/problems/{id}': { id: 'problem' },
  'GET /v1/problems/{id}/resolved': { id: 'problem' },
  'GET /v1/profiles': {},
  'POST /v1/sweeps': { body: SWEEP },
  'POST /v1/jobs': { body: SWEEP },
  'GET /v1/jobs/{id}': { id: 'job' },
  'GET /v1/jobs/{id}/events': { id: 'job' },
  'GET /v1/jobs/{id}/result': { id: 'job' },
  'GET /v1/jobs/{id}/report': { id: 'job' },
  'DELETE /v1/jobs/{id}': { id: 'job' },
  'POST /v1/hints': { body: { problem: 'mmc', vary: { 'server.slots': [4, 5] }, seeds: 1 } },
  'POST /v1/jobs/hints': { body: { problem: 'mmc', vary: { 'server.slots': [4, 5] }, seeds: 1 } },
  'POST /v1/jobs/capacity': { body: { problem: 'mmc', vary: { 'server.replicas': [1, 2] }, cost: 'server.replicas', seeds: 1 } },
};

const BODY_LIMIT = 4096;
let app: FastifyInstance;
let operations: { key: string; method: string; path: string; listed: Set<number> }[];

beforeAll(async () => {
  app = buildServer({
    runSweep: ((_sweep, options) => stubRun(options?.signal)) as SweepRunner,
    runHints: (_request, options) => stubRun(options.signal),
    // one sweep at a time and one job: a second is busy
    maxConcurrent: 1,
    maxActiveJobs: 1,
    bodyLimit: BODY_LIMIT,
  });
  const doc = (await app.inject('/openapi.json')).json() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      key: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      listed: new Set(Object.keys(op.responses).map(Number)),
    })),
  );
});

afterAll(async () => {
  await app.close();
});

function expectProblem(res: LightMyRequestResponse, what: string): void {
  expect(res.headers['content-type'], what).toBe('application/problem+json; charset=utf-8');
  const body = res.json();
  expect(body, what).toMatchObject({
    type: `https://servesim.dev/errors/${body.code}`,
    title: expect.any(String),
    status: res.statusCode,
    detail: expect.any(String),
    code: expect.stringMatching(/^(SERVESIM|FST)_/),
  });
}

/** A new job, once the one place for a job is free; settled unless the runners hang. */
async function createJob(): Promise<string> {
  for (;;) {
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', payload: SWEEP });
    if (res.statusCode === 429) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    expect(res.statusCode).toBe(202);
    const id = res.json().id as string;
    while (runnerDoes !== 'hang' && ['queued', 'running'].includes((await app.inject(`/v1/jobs/${id}`)).json().status)) await new Promise((r) => setTimeout(r, 5));
    return id;
  }
}

describe('the OpenAPI document lists every status each route answers', () => {
  it('provoked every way, each route answers only statuses it lists, every error a problem document', async () => {
    // a route added without an example here would go unchecked
    expect(operations.map((o) => o.key).sort()).toEqual(Object.keys(EXAMPLES).sort());
    const seen = new Map<string, Set<number>>(operations.map((o) => [o.key, new Set<number>()]));
    const send = async (key: string, options: InjectOptions, what: string): Promise<void> => {
      const res = await app.inject(options);
      seen.get(key)!.add(res.statusCode);
      if (res.statusCode >= 400) expectProblem(res, `${key} ${what}`);
    };
    const ids = { job: '', problem: 'mmc' };
    const request = (op: (typeof operations)[number], change: { id?: string; headers?: Record<string, string>; payload?: string | object; query?: string } = {}): InjectOptions => {
      const example = EXAMPLES[op.key]!;
      const id = change.id ?? (example.id === undefined ? '' : ids[example.id]);
      const payload = change.payload ?? example.body;
      return {
        method: op.method as NonNullable<InjectOptions['method']>,
        url: op.path.replace('{id}', encodeURIComponent(id)) + (change.query ?? ''),
        headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...change.headers },
        ...(payload === undefined ? {} : { payload }),
      };
    };
    // DELETE cancels the job the others read: it goes last
    const ordered = [...operations].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));

    // the runners failing with each code of the catalogue, and with a bug
    const failures: Error[] = [...(Object.keys(ERROR_STATUS) as ErrorCode[]).map((code) => new ServesimError(code, 'stub')), new Error('a bug')];
    for (const failure of failures) {
      runnerDoes = failure;
      ids.job = await createJob();
      for (const op of ordered) await send(op.key, request(op), `(runner throws ${(failure as { code?: string }).code ?? 'a bug'})`);
    }

    // a running job holds the one engine slot and the one job place
    runnerDoes = 'hang';
    ids.job = await createJob();
    for (const op of ordered) {
      // a running job's events stream until it ends
      if (op.key !== 'GET /v1/jobs/{id}/events') await send(op.key, request(op), '(busy)');
    }

    // fastify's own refusals, and the service's for what a client names or asks for
    runnerDoes = new Error('not reached');
    const changes: [string, Parameters<typeof request>[1]][] = [
      ['unknown id', { id: 'no-such' }],
      ['id past 100 characters', { id: 'x'.repeat(101) }],
      ['unknown query key', { query: '?bogus=1' }],
      ['Accept nobody serves', { headers: { accept: 'image/png' } }],
      ['not JSON', { payload: '{"problem": ' }],
      ['not application/json', { payload: '<sweep/>', headers: { 'content-type': 'application/xml' } }],
      ['body past the limit', { payload: JSON.stringify({ ...SWEEP, pad: 'x'.repeat(BODY_LIMIT) }) }],
      ['unknown field', { payload: { ...SWEEP, bogus: 1 } }],
    ];
    for (const [what, change] of changes) {
      ids.job = await createJob();
      for (const op of ordered) {
        // GET and HEAD bodies are never read
        if (change!.payload !== undefined && op.method === 'GET') continue;
        await send(op.key, request(op, change), `(${what})`);
      }
    }

    for (const op of operations) {
      const unlisted = [...seen.get(op.key)!].filter((s) => !op.listed.has(s));
      expect(unlisted, `${op.key} answers ${[...seen.get(op.key)!].join(', ')}; its document lists ${[...op.listed].join(', ')}`).toEqual([]);
    }
    // the provocations reach what they mean to: the catalogue's 422, a busy 429, fastify's 414 and 415
    expect([...seen.get('POST /v1/sweeps')!]).toEqual(expect.arrayContaining([400, 406, 413, 415, 422, 429, 499, 500, 503]));
    expect([...seen.get('GET /v1/jobs/{id}/result')!]).toEqual(expect.arrayContaining([400, 404, 406, 409, 414]));
  });
});

describe('errors outside any route are problem documents too', () => {
  it('an unknown route, and a URL that does not decode', async () => {
    for (const url of ['/v2/sweeps', '/v1/jobs/%E0%A4%A']) {
      const res = await app.inject(url);
      expect(res.statusCode).toBe(url.startsWith('/v2') ? 404 : 400);
      expectProblem(res, url);
    }
  });

  it('a request that is not HTTP gets a 400 problem document on the socket', async () => {
    const server = buildServer();
    await server.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = server.server.address() as AddressInfo;
      const answer = await new Promise<string>((resolve, reject) => {
        let text = '';
        const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
        socket.on('data', (chunk) => (text += String(chunk)));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(head).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/);
      expect(JSON.parse(body!)).toMatchObject({ type: expect.stringMatching(/^https:\/\/servesim\.dev\/errors\/HPE_/), title: 'Bad Request', status: 400, code: expect.stringMatching(/^HPE_/) });
    } finally {
      await server.close();
    }
  });
});
