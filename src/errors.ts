/**
 * The errors catalogue: every error servesim reports on purpose, each with a stable code and
 * the HTTP status the service answers with (after fastify's lib/errors.js).
 * A message names the field (as a dotted path) or the limit, and the reason.
 */

export type ErrorCode =
  | 'SERVESIM_PROBLEM_INVALID'
  | 'SERVESIM_OVERRIDE_INVALID'
  | 'SERVESIM_SWEEP_INVALID'
  | 'SERVESIM_CASE_UNKNOWN'
  | 'SERVESIM_SEEDS_INVALID'
  | 'SERVESIM_CAPACITY_EXCEEDED'
  | 'SERVESIM_GRID_TOO_LARGE'
  | 'SERVESIM_INPUT_TOO_LARGE'
  | 'SERVESIM_NO_ADAPTER'
  | 'SERVESIM_GPU_LIMIT'
  | 'SERVESIM_GPU_ERROR'
  | 'SERVESIM_CANCELLED'
  | 'SERVESIM_FILE_UNREADABLE'
  | 'SERVESIM_QUEUE_UNREACHABLE';

/** Each code's HTTP status. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  SERVESIM_PROBLEM_INVALID: 400,
  SERVESIM_OVERRIDE_INVALID: 400,
  SERVESIM_SWEEP_INVALID: 400,
  SERVESIM_CASE_UNKNOWN: 400,
  // a cap on seeds below the seeds asked for (--max-seeds, maxSeeds)
  SERVESIM_SEEDS_INVALID: 400,
  SERVESIM_CAPACITY_EXCEEDED: 422,
  SERVESIM_GRID_TOO_LARGE: 413,
  // a file or body past a bound on its size, nesting, keys or aliases (src/problem/parse.ts)
  SERVESIM_INPUT_TOO_LARGE: 413,
  SERVESIM_NO_ADAPTER: 503,
  SERVESIM_GPU_LIMIT: 422,
  // a validation error, out-of-memory or device loss while running a kernel
  SERVESIM_GPU_ERROR: 500,
  SERVESIM_CANCELLED: 499,
  SERVESIM_FILE_UNREADABLE: 400,
  // --queue names a Redis that refuses, does not answer, or is not Redis
  SERVESIM_QUEUE_UNREACHABLE: 503,
};

/** Control characters (C0, DEL, C1), and the invisible ones that reorder or hide text: bidi controls, line and paragraph separators. */
// eslint-disable-next-line no-control-regex -- finding them is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * Text that may quote input (a key, a value, a file's name) as it is safe to show on a terminal:
 * each control character as a `\u001b` escape, so an input cannot move the cursor, recolour or
 * hide what a message says. Every servesim error's message and field paths go through it.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export class ServesimError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  /** Dotted path of the offending field, when there is one (`gpu.slots`). */
  readonly path: string | undefined;

  constructor(code: ErrorCode, message: string, path?: string) {
    super(printable(path === undefined ? message : `${path}: ${message}`));
    this.name = 'ServesimError';
    this.code = code;
    this.statusCode = ERROR_STATUS[code];
    this.path = path === undefined ? undefined : printable(path);
  }
}

/** One field's problem, for errors that list several. */
export interface FieldIssue {
  readonly path: string;
  readonly message: string;
  /**
   * Other fields the value checked is worked out from (a case's arrivals: the rate, and the
   * duration): when an override (--set, a grid point) wrote one of them and not `path`, the
   * issue names that one, the field that was changed.
   */
  readonly from?: readonly string[];
}

/** Issues an error lists; the rest are counted, so a thousand mistakes get a short answer. */
export const MAX_LISTED_ISSUES = 20;

/** Issues joined by "; ", the first {@link MAX_LISTED_ISSUES} of them, then "... and N more". */
export function listIssues(lines: readonly string[]): string {
  const shown = lines.slice(0, MAX_LISTED_ISSUES).join('; ');
  const rest = lines.length - MAX_LISTED_ISSUES;
  return rest > 0 ? `${shown}; ... and ${rest.toLocaleString('en')} more` : shown;
}

/** The issues an error keeps for the service's body: those its message lists, printable. */
export function keptIssues(issues: readonly FieldIssue[]): FieldIssue[] {
  return issues.slice(0, MAX_LISTED_ISSUES).map((i) => ({ path: printable(i.path), message: printable(i.message) }));
}

/** An error listing field issues (capped as the message is), keeping them for the service's body. */
function withIssues(code: ErrorCode, what: string, issues: readonly FieldIssue[]): ServesimError {
  const err = new ServesimError(code, `${what}: ${listIssues(issues.map((i) => `${i.path}: ${i.message}`))}`);
  return Object.assign(err, { issues: keptIssues(issues) });
}

export function invalidProblem(issues: readonly FieldIssue[], source?: string): ServesimError {
  return withIssues('SERVESIM_PROBLEM_INVALID', `${source === undefined ? '' : `${source}: `}invalid problem`, issues);
}

/** Bad `--set PATH=VALUE` overrides, all of them at once, each with the path it names. */
export function invalidOverrides(issues: readonly FieldIssue[]): ServesimError {
  return withIssues('SERVESIM_OVERRIDE_INVALID', 'invalid --set', issues);
}

/** A sweep whose fields fail their schema; `source` names the file. */
export function invalidSweep(issues: readonly FieldIssue[], source?: string): ServesimError {
  return withIssues('SERVESIM_SWEEP_INVALID', `${source === undefined ? '' : `${source}: `}invalid sweep`, issues);
}

/** A hint request whose fields fail their schema (a search is a sweep: the same code). */
export function invalidHintRequest(issues: readonly FieldIssue[]): ServesimError {
  return withIssues('SERVESIM_SWEEP_INVALID', 'invalid hint request', issues);
}

/** A capacity search request whose fields fail their schema (a search is a sweep: the same code). */
export function invalidCapacityRequest(issues: readonly FieldIssue[]): ServesimError {
  return withIssues('SERVESIM_SWEEP_INVALID', 'invalid capacity request', issues);
}
