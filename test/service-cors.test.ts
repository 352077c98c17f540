/**
 * `serve --cors ORIGIN`: pages from the named origins may call the API from a browser; without
 * the flag no page may (no Access-Control-Allow-Origin header at all).
 */
import { InvalidArgumentError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { collectOrigins } from '../src/cli/serve-command.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { serveInProcess } from './cli-support.js';

const NOTEBOOK = 'http://localhost:8888';

const preflight = (origin: string, method = 'POST') => ({
  method: 'OPTIONS' as const,
  url: '/v1/sweeps',
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type' },
});

afterAll(async () => {
  await closeEngines();
});

describe('CORS', () => {
  it('lets the named origins call it, preflight included, and no other; without any, no page', async () => {
    const app = buildServer({ cors: [NOTEBOOK] });
    const closed = buildServer();
    try {
      const allowed = await app.inject(preflight(NOTEBOOK));
      expect(allowed.statusCode).toBe(204);
      expect(allowed.headers['access-control-allow-origin']).toBe(NOTEBOOK);
      // a page cancels jobs too, and reads where a new job is and when to come back after a 429
      expect((await app.inject(preflight(NOTEBOOK, 'DELETE'))).headers['access-control-allow-methods']).toBe('GET, HEAD, POST, DELETE');
      const health = await app.inject({ url: '/healthz', headers: { origin: NOTEBOOK } });
      expect(health.headers['access-control-allow-origin']).toBe(NOTEBOOK);
      expect(health.headers['access-control-expose-headers']).toBe('location, retry-after');

      for (const [server, origin] of [[app, 'http://elsewhere.example'], [closed, NOTEBOOK]] as const) {
        expect((await server.inject(preflight(origin))).headers['access-control-allow-origin']).toBeUndefined();
        expect((await server.inject({ url: '/healthz', headers: { origin } })).headers['access-control-allow-origin']).toBeUndefined();
      }
    } finally {
      await app.close();
      await closed.close();
    }
  });

  it('--cors is repeatable and takes comma lists; a URL with a path is refused', () => {
    expect(collectOrigins('https://b.example', collectOrigins(`${NOTEBOOK}, http://a.example:3000`))).toEqual([NOTEBOOK, 'http://a.example:3000', 'https://b.example']);
    for (const bad of [`${NOTEBOOK}/`, 'http://a.example/dash', 'localhost:8888', '*']) {
      expect(() => collectOrigins(bad)).toThrow(InvalidArgumentError);
    }
  });

  it('servesim serve --cors reaches the server', async () => {
    const { base, interrupt, exit } = await serveInProcess(['--cors', `http://a.example,${NOTEBOOK}`]);
    const res = await fetch(`${base}/healthz`, { headers: { origin: NOTEBOOK } });
    expect(res.headers.get('access-control-allow-origin')).toBe(NOTEBOOK);
    interrupt();
    expect(await exit).toBe(0);
  });
});
