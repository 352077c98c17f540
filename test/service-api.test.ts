/**
 * The service's other routes: shipped problems, health, the OpenAPI document, hints, and the
 * shape every error takes. Needs `npm run build` first (the pool's workers run from dist/).
 */
import { readdirSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { shippedProblemsDir } from '../src/problem/source.js';

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer();
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

describe('problems', () => {
  it('lists every shipped problem with its goals and cases', async () => {
    const res = await app.inject('/v1/problems');
    expect(res.statusCode).toBe(200);
    const { problems } = res.json();
    const files = readdirSync(shippedProblemsDir()).filter((f) => f.endsWith('.yaml')).map((f) => f.replace('.yaml', ''));
    expect(problems.map((p: { id: string }) => p.id)).toEqual(files.sort());
    expect(problems.find((p: { id: string }) => p.id === 'hot-prefix')).toEqual({
      id: 'hot-prefix',
      title: 'One replica owns the hot prefix',
      goals: { success: 0.99, p99_ms: 3000 },
      confidence: expect.any(Number),
      cases: ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'],
      links: { self: '/v1/problems/hot-prefix' },
    });
  });

  it('gives one problem as its file states it, or 404 naming the id and the known ones', async () => {
    const mmc = await app.inject('/v1/problems/mmc');
    expect(mmc.statusCode).toBe(200);
    expect(mmc.json()).toMatchObject({ id: 'mmc', goals: { success: 0.99, p99: '2s' }, server: { slots: 4 } });
    expect(mmc.json()).not.toHaveProperty('lb');
    // the trace as the file names it, not its 12,031 rows
    const trace = await app.inject('/v1/problems/conversation-trace');
    expect(trace.json().traffic.trace).toBe('traces/mooncake-conversation.jsonl');
    expect(trace.body.length).toBeLessThan(10_000);

    for (const url of ['/v1/problems/no-such', '/v1/problems/no-such/resolved']) {
      const missing = await app.inject(url);
      expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(missing.json()).toEqual({
        type: 'https://servesim.dev/errors/SERVESIM_NOT_FOUND',
        title: 'Not Found',
        status: 404,
        code: 'SERVESIM_NOT_FOUND',
        detail: expect.stringMatching(/no shipped problem "no-such"; known: .*hot-prefix.*mmc/),
      });
    }
  });

  it('gives one problem as servesim reads it: defaults filled in, times in microseconds', async () => {
    const mmc = await app.inject('/v1/problems/mmc/resolved');
    expect(mmc.statusCode).toBe(200);
    expect(mmc.json()).toMatchObject({ id: 'mmc', goals: { success: 0.99, p99: 2_000_000 }, server: { slots: 4 } });
    // a trace as what it is, not its 12,031 rows
    const trace = await app.inject('/v1/problems/conversation-trace/resolved');
    expect(trace.json().traffic.trace).toEqual({ file: 'traces/mooncake-conversation.jsonl', format: 'mooncake', requests: 12_031, spanMicros: 3_536_999_000 });
    expect(trace.body.length).toBeLessThan(10_000);
  });
});

describe('health, documentation, unknown routes', () => {
  it('GET /healthz says ok, the engine and the load', async () => {
    const res = await app.inject('/healthz');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, engines: { cpu: { threads: expect.any(Number) } }, sweeps: { running: 0, max: 2 }, jobs: { running: 0 } });
  });

  it('GET /openapi.json documents every route with the schemas fastify validates with', async () => {
    const doc = (await app.inject('/openapi.json')).json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/healthz',
      '/openapi.json',
      '/v1/hints',
      '/v1/jobs',
      '/v1/jobs/capacity',
      '/v1/jobs/hints',
      '/v1/jobs/{id}',
      '/v1/jobs/{id}/events',
      '/v1/jobs/{id}/report',
      '/v1/jobs/{id}/result',
      '/v1/problems',
      '/v1/problems/{id}',
      '/v1/problems/{id}/resolved',
      '/v1/profiles',
      '/v1/sweeps',
    ]);
    const sweeps = doc.paths['/v1/sweeps'].post;
    const body = sweeps.requestBody.content['application/json'].schema;
    expect(body.additionalProperties).toBe(false);
    expect(body.required).toEqual(['problem', 'grid']);
    expect(Object.keys(sweeps.responses['200'].content)).toEqual(['application/vnd.apache.arrow.stream', 'application/vnd.apache.parquet', 'application/json', 'text/csv']);
    expect(sweeps.responses['429'].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    expect(doc.paths['/v1/jobs/{id}'].delete.parameters).toEqual([expect.objectContaining({ name: 'id', in: 'path', required: true })]);
    expect(doc.paths['/v1/jobs/{id}/result'].get.parameters[1]).toMatchObject({ name: 'partial', in: 'query', required: false });
    expect(doc.paths['/v1/hints'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('vary');
  });

  it('documents every column of a JSON sweep table, with its type', async () => {
    const doc = (await app.inject('/openapi.json')).json();
    expect(doc.paths['/v1/sweeps'].post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SweepTable' });
    const columns: Record<string, { type: string | string[]; description: string }> = doc.components.schemas.SweepTable.properties.rows.items.properties;
    const res = await app.inject({
      method: 'POST', url: '/v1/sweeps', headers: { accept: 'application/json' },
      payload: { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 2, cases: ['as-given'] },
    });
    expect(res.statusCode).toBe(200);
    const [row] = res.json().rows as Record<string, unknown>[];
    expect(Object.keys(row!)).toEqual(['server.slots', ...Object.keys(columns)]);
    for (const [name, column] of Object.entries(columns)) {
      expect(column.description.length, name).toBeGreaterThan(10);
      const value = row![name];
      const type = value === null ? 'null' : typeof value === 'number' ? (Number.isInteger(value) ? ['integer', 'number'] : ['number']) : [typeof value];
      expect([column.type].flat().some((t) => [type].flat().includes(t)), `${name}: ${JSON.stringify(value)} is ${String(column.type)}`).toBe(true);
    }
    // an M/M/c problem has a server and nothing else
    expect([row!['server_utilization'] === null, row!['gpu_utilization']]).toEqual([false, null]);
  });

  it('an unknown route is a 404 in the same error shape', async () => {
    const res = await app.inject('/v2/sweeps');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ status: 404, code: 'SERVESIM_NOT_FOUND', title: 'Not Found' });
  });
});

describe('POST /v1/hints', () => {
  const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/hints', payload: payload as object });

  it('refuses bad input with the field and the reason', async () => {
    const cases: [unknown, string, RegExp][] = [
      [{ problem: 'mmc', vary: { 'server.slots': [4] }, budget: 3 }, 'FST_ERR_VALIDATION', /body\.budget: unknown field/],
      [{ problem: 'mmc', vary: { 'server.slots': [4] }, seeds: 0 }, 'FST_ERR_VALIDATION', /body\.seeds: fits none of its forms \(must be >= 1 \|.* must be "auto"\)/],
      [{ problem: 'mmc' }, 'FST_ERR_VALIDATION', /body\.vary: required/],
      [{ problem: 'mmc', vary: {} }, 'SERVESIM_SWEEP_INVALID', /vary: needs at least one path/],
      [{ problem: 'mmc', vary: { 'server.slotz': [4] } }, 'SERVESIM_SWEEP_INVALID', /server\.slotz: unknown field/],
      [{ problem: 'problems/mmc.yaml', vary: { 'server.slots': [4] } }, 'SERVESIM_SWEEP_INVALID', /not a shipped problem id/],
    ];
    for (const [payload, code, message] of cases) {
      const res = await post(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe(code);
      expect(res.json().detail).toMatch(message);
    }
  });

  it('finds the fewest slots that pass a tiny problem', async () => {
    // 64 seeds decide a pass at one look; 2 would leave every verdict UNDECIDED
    const res = await post({ problem: 'mmc', vary: { 'server.slots': [4, 5, 6] }, cost: 'server.slots', seeds: 64 });
    expect(res.statusCode).toBe(200);
    const result = res.json();
    expect(result).toMatchObject({ problemId: 'mmc', paths: ['server.slots'], gridSize: 3 });
    expect(result.hints[0].found.values).toEqual({ 'server.slots': 4 });
    expect((await app.inject('/healthz')).json().sweeps.running).toBe(0);
  });
});
