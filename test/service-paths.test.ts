/**
 * What the service's errors reveal: never the server's absolute paths, never a file a client
 * names. Over HTTP a problem is a shipped id or inline.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { packageRoot } from '../src/package-root.js';
import { buildServer } from '../src/service/server.js';
import type { SweepRunner } from '../src/service/streaming-run.js';

const ROOT = packageRoot()!.dir;

/** A runner that fails as a server-side fault would, quoting a path on the server. */
const failing: SweepRunner = () =>
  Promise.reject(new ServesimError('SERVESIM_FILE_UNREADABLE', `cannot find the WGSL kernels in ${ROOT}/kernels/`));

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer({ runSweep: failing });
});

afterAll(async () => {
  await app.close();
});

const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, payload: payload as object });

async function settled(id: string): Promise<Record<string, any>> {
  for (;;) {
    const status = (await app.inject({ method: 'GET', url: `/v1/jobs/${id}` })).json();
    if (status.status !== 'queued' && status.status !== 'running') return status;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('HTTP errors never carry an absolute path', () => {
  it('a bad grid point of a shipped problem names the problem by its file name', async () => {
    const res = await post('/v1/sweeps', { problem: 'mmc', grid: { 'server.slots': [0] } });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toBe(
      'grid: grid point 0 (server.slots=0): mmc.yaml: invalid problem: server.slots: must be a positive integer, got 0 (from --set server.slots=0)',
    );
  });

  it("a server-side failure names the server's files relative to the package", async () => {
    const res = await post('/v1/sweeps', { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 1 });
    expect(res.json().detail).toBe('cannot find the WGSL kernels in kernels/');
  });

  it("a failed job's status likewise", async () => {
    const created = await post('/v1/jobs', { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 1 });
    expect(created.statusCode).toBe(202);
    const status = await settled(created.json().id);
    expect(status.error).toEqual({ code: 'SERVESIM_FILE_UNREADABLE', message: 'cannot find the WGSL kernels in kernels/' });
  });

  it("a bug's message stays in the server's log", async () => {
    const buggy = buildServer({ runSweep: () => Promise.reject(new Error(`EACCES: permission denied, open '${ROOT}/secret'`)) });
    try {
      const res = await buggy.inject({ method: 'POST', url: '/v1/sweeps', payload: { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 1 } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ code: 'SERVESIM_INTERNAL', detail: 'internal error; the server log has the details' });
    } finally {
      await buggy.close();
    }
  });
});

describe('a problem is a shipped id or inline, never a path on the server', () => {
  it('a path is refused by every route, naming the field and reading nothing', async () => {
    for (const problem of ['/etc/passwd', '../x.yaml', 'problems/mmc.yaml']) {
      for (const [url, body] of [['/v1/sweeps', { grid: { 'server.slots': [4] } }], ['/v1/jobs', { grid: { 'server.slots': [4] } }], ['/v1/hints', { vary: { 'server.slots': [4] } }]] as const) {
        const res = await post(url, { problem, ...body });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({
          code: 'SERVESIM_SWEEP_INVALID',
          detail: `problem: "${problem}" is not a shipped problem id; send the problem inline or name one of GET /v1/problems`,
        });
      }
    }
  });
});
