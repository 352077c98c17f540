/**
 * One error policy for the service: every error, servesim's, fastify's or a bug, answers
 * JSON `{statusCode, code, error, message}` (plus `issues` when the error lists fields).
 * Validation messages name the field path and the reason; unknown keys are named.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import { listIssues, ServesimError, type FieldIssue } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** Errors of the service itself, not of the input's content: the catalogue's shape. */
export type ServiceErrorCode =
  | 'SERVESIM_BUSY'
  | 'SERVESIM_NOT_FOUND'
  | 'SERVESIM_JOB_NOT_FINISHED'
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

export interface ErrorBody {
  readonly statusCode: number;
  readonly code: string;
  readonly error: string;
  readonly message: string;
  readonly issues?: readonly FieldIssue[];
}

export function errorBody(statusCode: number, code: string, message: string, issues?: readonly FieldIssue[]): ErrorBody {
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? 'Error', message, ...(issues ? { issues } : {}) };
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

function statusOf(err: Error & { statusCode?: unknown; validation?: unknown }): number {
  if (err instanceof ServesimError || err instanceof ServiceError) return err.statusCode;
  if (err.validation !== undefined) return 400;
  const status = err.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: Error & { code?: unknown; statusCode?: unknown; validation?: unknown; issues?: unknown }, request, reply) => {
    const statusCode = statusOf(err);
    if (statusCode >= 500) request.log.error({ err }, 'request failed');
    if (err instanceof ServiceError) void reply.headers(err.headers);
    // a bug has no code of its own, and its message (which may quote anything) stays in the log
    const bug = typeof err.code !== 'string';
    const code = bug ? 'SERVESIM_INTERNAL' : (err.code as string);
    const message = bug && statusCode >= 500 ? 'internal error; the server log has the details' : publicMessage(err);
    const issues = Array.isArray(err.issues) ? (err.issues as FieldIssue[]) : undefined;
    return reply.code(statusCode).type('application/json; charset=utf-8').send(errorBody(statusCode, code, message, issues));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(404, 'SERVESIM_NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}; GET /openapi.json lists them`)),
  );
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
 * ajv's errors as one message. An `anyOf` failure arrives after its branches' errors; they
 * become one line listing what the value could have been.
 */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], dataVar: string): Error {
  const lines: string[] = [];
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
      lines.push(`${here}: must be ${types.join(' or ').replace(/,/g, ' or ')}`);
    } else {
      const reasons = branches.map((b) => {
        const d = describe(b, dataVar);
        return d.path === here ? d.reason : `${d.path.slice(here.length).replace(/^\./, '')}: ${d.reason}`;
      });
      lines.push(`${here}: fits none of its forms (${reasons.join(' | ')})`);
    }
  }
  for (const e of pending) {
    const d = describe(e, dataVar);
    lines.push(`${d.path}: ${d.reason}`);
  }
  return new Error(`invalid request: ${listIssues(lines)}`);
}
