/**
 * One error policy for the service: every error, servesim's, fastify's or a bug, answers an
 * RFC 9457 problem document (`application/problem+json`): `type` (a URI naming the code),
 * `title`, `status`, `detail`, the project's `code`, and the field `path` and `issues` where
 * the error has them. Validation messages name the field path and the reason; unknown keys are
 * named.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError, FastifyServerOptions } from 'fastify';
import { keptIssues, listIssues, printable, ServesimError, type FieldIssue } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** Errors of the service itself, not of the input's content: the catalogue's shape. */
export type ServiceErrorCode =
  | 'SERVESIM_BUSY'
  | 'SERVESIM_NOT_FOUND'
  | 'SERVESIM_JOB_NOT_FINISHED'
  // a search job that ended without a result (failed, or a hint cancelled), or a hint job's report
  | 'SERVESIM_JOB_NO_RESULT'
  | 'SERVESIM_NOT_ACCEPTABLE';

export class ServiceError extends Error {
  readonly code: ServiceErrorCode;
  readonly statusCode: number;
  /** Response headers the error needs (Retry-After). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ServiceErrorCode, statusCode: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.statusCode = statusCode;
    this.headers = headers;
  }
}

export const PROBLEM_TYPE = 'application/problem+json';

/**
 * The `type` of a code's problems: an identifier, one per code (SERVESIM_* from src/errors.ts and
 * this file, fastify's FST_*, node's), compared as a string and never fetched (RFC 9457 3.1.1).
 */
function problemType(code: string): string {
  return `https://servesim.dev/errors/${code}`;
}

interface Problem {
  readonly type: string;
  /** The status's phrase: one code has one status, so one type has one title. */
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
  /** Dotted path of the offending field, when there is one. */
  readonly path?: string;
  readonly issues?: readonly FieldIssue[];
}

/** The status's phrase; 499 (nginx's: the client went away) has none in node's table. */
export function statusTitle(status: number): string {
  return STATUS_CODES[status] ?? 'Client Closed Request';
}

function problem(status: number, code: string, detail: string, extra: { path?: string | undefined; issues?: readonly FieldIssue[] | undefined } = {}): Problem {
  return {
    type: problemType(code),
    title: statusTitle(status),
    status,
    detail,
    code,
    ...(extra.path === undefined ? {} : { path: extra.path }),
    ...(extra.issues === undefined ? {} : { issues: extra.issues }),
  };
}

/** Too much work at once: the client should come back, and is told when. */
export function busy(what: string, retryAfterSeconds: number): ServiceError {
  return new ServiceError('SERVESIM_BUSY', 429, `${what}; retry in ${retryAfterSeconds} s`, {
    'retry-after': String(retryAfterSeconds),
  });
}

/** An error's message as a client may see it: the server's own files named relative to the package, never by absolute path. */
export function publicMessage(err: Error): string {
  const root = packageRoot()?.dir;
  return root === undefined ? err.message : err.message.split(`${root}/`).join('');
}

type AnyError = Error & { code?: unknown; statusCode?: unknown; validation?: unknown; issues?: unknown };

function statusOf(err: AnyError): number {
  if (err instanceof ServesimError || err instanceof ServiceError) return err.statusCode;
  if (err.validation !== undefined) return 400;
  const status = err.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

/** Any error as the problem document it answers, logged when it is the server's fault. */
function sendProblem(err: AnyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const status = statusOf(err);
  if (status >= 500) request.log.error({ err }, 'request failed');
  if (err instanceof ServiceError) void reply.headers(err.headers);
  // a bug has no code of its own, and its message (which may quote anything) stays in the log
  const bug = typeof err.code !== 'string';
  const code = bug ? 'SERVESIM_INTERNAL' : (err.code as string);
  // fastify's and node's messages quote the request too
  const detail = bug && status >= 500 ? 'internal error; the server log has the details' : printable(publicMessage(err));
  const issues = Array.isArray(err.issues) ? (err.issues as FieldIssue[]) : undefined;
  const path = err instanceof ServesimError ? err.path : undefined;
  return reply.code(status).type(PROBLEM_TYPE).send(problem(status, code, detail, { path, issues }));
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler(sendProblem);
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      new ServiceError('SERVESIM_NOT_FOUND', 404, `no route ${request.method} ${request.url.split('?')[0]}; GET /openapi.json lists them`),
      request,
      reply,
    ),
  );
}

/**
 * Fastify's errors before a route is found (a malformed URL, an id past 100 characters) go to
 * this option rather than to the error handler.
 */
export const frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']> = (err, request, reply) => void sendProblem(err, request, reply);

/**
 * A request too malformed to reach fastify (bad HTTP, headers past node's limit, too slow to
 * arrive) is answered on the socket, as a problem too; the connection then closes, as node does.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  // a reset connection has no one to answer
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const body = JSON.stringify(problem(status, err.code ?? 'ERR_CLIENT', printable(err.message)));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** A JSON pointer (`/grid/gpu.slots`) as a path (`body.grid["gpu.slots"]`). */
function pathOf(dataVar: string, pointer: string): string {
  let out = dataVar;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return out;
}

function child(pointer: string, key: unknown): string {
  return `${pointer}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** One ajv error as "path: reason", the path naming the offending key where there is one. */
function describe(e: FastifySchemaValidationError, dataVar: string): { path: string; reason: string } {
  const p = e.params;
  switch (e.keyword) {
    case 'additionalProperties':
      return { path: pathOf(dataVar, child(e.instancePath, p['additionalProperty'])), reason: 'unknown field' };
    case 'required':
      return { path: pathOf(dataVar, child(e.instancePath, p['missingProperty'])), reason: 'required' };
    case 'enum':
      return { path: pathOf(dataVar, e.instancePath), reason: `must be one of ${(p['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'const':
      return { path: pathOf(dataVar, e.instancePath), reason: `must be ${JSON.stringify(p['allowedValue'])}` };
    default:
      return { path: pathOf(dataVar, e.instancePath), reason: e.message ?? e.keyword };
  }
}

/**
 * ajv's errors as one message, and as field issues (each with its path, as the project's own
 * errors list them). An `anyOf` failure arrives after its branches' errors; they become one
 * issue listing what the value could have been.
 */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const issues: FieldIssue[] = [];
  let pending: FastifySchemaValidationError[] = [];
  for (const e of errors) {
    if (e.keyword !== 'anyOf') {
      pending.push(e);
      continue;
    }
    const branches = pending.filter((b) => b.schemaPath.startsWith(`${e.schemaPath}/`));
    pending = pending.filter((b) => !branches.includes(b));
    const here = pathOf(dataVar, e.instancePath);
    const types = branches.filter((b) => b.keyword === 'type' && b.instancePath === e.instancePath).map((b) => String(b.params['type']));
    if (types.length === branches.length) {
      issues.push({ path: here, message: `must be ${types.join(' or ').replace(/,/g, ' or ')}` });
    } else {
      const reasons = branches.map((b) => {
        const d = describe(b, dataVar);
        return d.path === here ? d.reason : `${d.path.slice(here.length).replace(/^\./, '')}: ${d.reason}`;
      });
      issues.push({ path: here, message: `fits none of its forms (${reasons.join(' | ')})` });
    }
  }
  for (const e of pending) {
    const d = describe(e, dataVar);
    issues.push({ path: d.path, message: d.reason });
  }
  const err = new Error(`invalid request: ${listIssues(issues.map((i) => `${i.path}: ${i.message}`))}`);
  return Object.assign(err, { issues: keptIssues(issues) });
}
