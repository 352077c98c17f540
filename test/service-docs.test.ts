/**
 * GET /docs: the API's page, from the same document GET /openapi.json serves, with every script,
 * style and image it loads served here (it works with no network).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/service/server.js';

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer();
});

afterAll(async () => {
  await app.close();
});

describe('/docs', () => {
  it('is an HTML page whose assets all load from this server', async () => {
    const page = await app.inject('/docs');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThan(3);
    expect(assets.filter((a) => !a.startsWith('/docs/'))).toEqual([]);
    for (const asset of assets) {
      const res = await app.inject(asset);
      expect(res.statusCode, asset).toBe(200);
      expect(res.body.length, asset).toBeGreaterThan(0);
    }
  });

  it('shows the document GET /openapi.json serves, validated against nothing elsewhere', async () => {
    const init = (await app.inject('/docs/static/swagger-initializer.js')).body;
    expect(init).toContain("url: resolveUrl('./json')");
    expect(init).toContain('validatorUrl: null');
    expect((await app.inject('/docs/json')).json()).toEqual((await app.inject('/openapi.json')).json());
  });
});
