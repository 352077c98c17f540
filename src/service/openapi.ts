/**
 * GET /openapi.json: an OpenAPI 3.1 document built from the routes as registered, so the
 * request schemas it publishes are the ones fastify validates with. Each route describes its
 * answers in `config.doc`.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { packageVersion } from '../cli/version.js';
import type { JsonSchema } from './schemas.js';

export interface ResponseDoc {
  readonly description: string;
  /** Media types of a success; errors are always the JSON error body. */
  readonly types?: readonly string[];
}

export interface RouteDoc {
  readonly summary: string;
  readonly responses: Readonly<Record<number, ResponseDoc>>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    doc?: RouteDoc;
  }
}

/** What any route that reads input may answer. */
export const ERROR_RESPONSES = {
  400: { description: 'bad input: the message names the field path and the reason (unknown keys included)' },
  500: { description: 'a bug, or the engine failed' },
} as const satisfies Record<number, ResponseDoc>;

export const NOT_FOUND: ResponseDoc = { description: 'no such job or problem; the message says what there is' };
export const NOT_ACCEPTABLE: ResponseDoc = { description: 'the Accept header asks for none of Arrow, JSON, CSV' };

const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string', description: 'SERVESIM_* (src/errors.ts, src/service/errors.ts) or FST_* (fastify)' },
    error: { type: 'string' },
    message: { type: 'string' },
    issues: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
  required: ['statusCode', 'code', 'error', 'message'],
};

function parameters(schema: unknown, where: 'path' | 'query'): JsonSchema[] {
  const s = schema as { properties?: Record<string, JsonSchema>; required?: string[] } | undefined;
  return Object.entries(s?.properties ?? {}).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path' || (s?.required ?? []).includes(name),
    schema: p,
  }));
}

function response(status: number, doc: ResponseDoc): JsonSchema {
  const types = status >= 400 ? ['application/json'] : (doc.types ?? []);
  const schema = status >= 400 ? { $ref: '#/components/schemas/Error' } : {};
  return { description: doc.description, ...(types.length > 0 ? { content: Object.fromEntries(types.map((t) => [t, { schema }])) } : {}) };
}

function operation(route: RouteOptions, doc: RouteDoc): JsonSchema {
  const schema = (route.schema ?? {}) as { body?: JsonSchema; params?: unknown; querystring?: unknown };
  const params = [...parameters(schema.params, 'path'), ...parameters(schema.querystring, 'query')];
  return {
    summary: doc.summary,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(schema.body ? { requestBody: { required: true, content: { 'application/json': { schema: schema.body } } } } : {}),
    responses: Object.fromEntries(Object.entries(doc.responses).map(([status, r]) => [status, response(Number(status), r)])),
  };
}

/** Collects the routes registered after this call and serves their document. */
export function registerOpenApi(app: FastifyInstance): void {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  let document: JsonSchema | undefined;
  const build = (): JsonSchema => {
    const paths: Record<string, Record<string, JsonSchema>> = {};
    for (const route of routes) {
      const doc = route.config?.doc;
      if (doc === undefined) continue;
      const path = route.url.replace(/:(\w+)/g, '{$1}');
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue;
        (paths[path] ??= {})[method.toLowerCase()] = operation(route, doc);
      }
    }
    return {
      openapi: '3.1.0',
      info: {
        title: 'servesim',
        version: packageVersion(),
        description: 'Monte Carlo simulation of LLM-serving designs: sweeps over parameter grids (Arrow, JSON, CSV), background jobs, shipped problems, hints.',
      },
      paths,
      components: { schemas: { Error: ERROR_SCHEMA } },
    };
  };
  app.get(
    '/openapi.json',
    { config: { doc: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', types: ['application/json'] } } } } },
    async () => (document ??= build()),
  );
}
