/**
 * GET /openapi.json: an OpenAPI 3.1 document built from the routes as registered, so the
 * request schemas it publishes are the ones fastify validates with. Each route describes its
 * answers in `config.doc`; the errors every route of its shape may answer (fastify's own, a
 * bug) are added here, and every error is a problem document (src/service/errors.ts).
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { packageVersion } from '../version.js';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';
import { PROBLEM_TYPE, statusTitle } from './errors.js';
import { sweepTableSchema, type JsonSchema } from './schemas.js';

/** A sweep table's JSON body, by reference. */
export const SWEEP_TABLE_JSON: JsonSchema = { $ref: '#/components/schemas/SweepTable' };

export interface ResponseDoc {
  readonly description: string;
  /** Media types of a success; errors are always problem documents. */
  readonly types?: readonly string[];
  /** The schema of its application/json body, where the document describes one. */
  readonly json?: JsonSchema;
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

/** What fastify itself answers, by what a route reads. */
const BAD_INPUT: ResponseDoc = { description: 'bad input: the detail names the field path and the reason (unknown keys included)' };
const SHAPE_ERRORS: Readonly<Record<'always' | 'body' | 'params' | 'querystring', Readonly<Record<number, ResponseDoc>>>> = {
  always: { 500: { description: 'a bug, or the engine failed; the detail says which' } },
  // fastify parses a body sent with any method but GET and HEAD
  body: {
    400: { description: `${BAD_INPUT.description}; a body that is not JSON` },
    413: { description: 'a body too large, too deep or with too many keys' },
    415: { description: 'a body that is not application/json' },
  },
  params: { 400: BAD_INPUT, 414: { description: 'a path parameter longer than 100 characters' } },
  querystring: { 400: BAD_INPUT },
};

/** What running a sweep or a search may answer: each status of the errors catalogue, with its codes. */
function runErrors(): Record<number, ResponseDoc> {
  const codes = new Map<number, ErrorCode[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS) as [ErrorCode, number][]) codes.set(status, [...(codes.get(status) ?? []), code]);
  return Object.fromEntries([...codes].map(([status, list]) => [status, { description: `${statusTitle(status)}: ${list.join(', ')}` }]));
}

export const RUN_ERRORS: Readonly<Record<number, ResponseDoc>> = runErrors();

export const NOT_FOUND: ResponseDoc = { description: 'no such job or problem; the detail says what there is' };
export const NOT_ACCEPTABLE: ResponseDoc = { description: 'the Accept header asks for none of Arrow, JSON, CSV' };

const PROBLEM_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'RFC 9457 problem details',
  properties: {
    type: { type: 'string', format: 'uri', description: 'https://servesim.dev/errors/<code>: names the code; not fetched' },
    title: { type: 'string', description: "the status's phrase" },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'what went wrong, naming the field or the limit' },
    code: { type: 'string', description: 'SERVESIM_* (src/errors.ts, src/service/errors.ts), FST_* (fastify), or HPE_* and ERR_HTTP_* (node: not HTTP, too slow)' },
    path: { type: 'string', description: 'dotted path of the offending field, when there is one' },
    issues: { type: 'array', description: 'the first 20 field issues', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
  required: ['type', 'title', 'status', 'detail', 'code'],
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
  const types = status >= 400 ? [PROBLEM_TYPE] : (doc.types ?? []);
  const schemaOf = (type: string): JsonSchema =>
    status >= 400 ? { $ref: '#/components/schemas/Problem' } : type === 'application/json' && doc.json !== undefined ? doc.json : {};
  return { description: doc.description, ...(types.length > 0 ? { content: Object.fromEntries(types.map((t) => [t, { schema: schemaOf(t) }])) } : {}) };
}

/** A body's media type: its schema, and the schema's first example as the one /docs fills in. */
function bodyMedia(schema: JsonSchema): JsonSchema {
  const [example] = Array.isArray(schema['examples']) ? (schema['examples'] as unknown[]) : [];
  return { schema, ...(example === undefined ? {} : { example }) };
}

function operation(route: RouteOptions, method: string, doc: RouteDoc): JsonSchema {
  const schema = (route.schema ?? {}) as { body?: JsonSchema; params?: unknown; querystring?: unknown };
  const params = [...parameters(schema.params, 'path'), ...parameters(schema.querystring, 'query')];
  const responses: Record<number, ResponseDoc> = {
    ...SHAPE_ERRORS.always,
    ...(method === 'GET' ? {} : SHAPE_ERRORS.body),
    ...(schema.params ? SHAPE_ERRORS.params : {}),
    ...(schema.querystring ? SHAPE_ERRORS.querystring : {}),
    // the route's own descriptions are the more specific
    ...doc.responses,
  };
  return {
    summary: doc.summary,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(schema.body ? { requestBody: { required: true, content: { 'application/json': bodyMedia(schema.body) } } } : {}),
    responses: Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, response(Number(status), r)])),
  };
}

/** Collects the routes registered after this call and serves their document; returns it, built once all are in. */
export function registerOpenApi(app: FastifyInstance): () => JsonSchema {
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
        (paths[path] ??= {})[method.toLowerCase()] = operation(route, method, doc);
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
      components: { schemas: { Problem: PROBLEM_SCHEMA, SweepTable: sweepTableSchema } },
    };
  };
  const openApi = (): JsonSchema => (document ??= build());
  app.get(
    '/openapi.json',
    { config: { doc: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', types: ['application/json'] } } } } },
    async () => openApi(),
  );
  return openApi;
}
