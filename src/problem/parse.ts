/**
 * Problem files in, typed Problems out: YAML (or JSON) text, a file on disk, or an object an
 * HTTP client sent. Every path goes through the same steps: overrides, field validation,
 * cross-field checks, conversion. Every problem found is reported at once, each naming its
 * field and, for text input, its line.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { invalidProblem, ServesimError, type FieldIssue } from '../errors.js';
import type { Problem } from '../model/problem.js';
import { buildProblem, componentIssues } from './build.js';
import { fieldIssues } from './issues.js';
import { applyOverrides, overrideFor } from './overrides.js';
import { isPlainObject, parsePath } from './schema-walk.js';
import { problemFileSchema } from './schema.js';

export { selectCases } from './scenarios.js';

/** Finds the line of a field in the source text, when there is one. */
type LineOf = (path: string) => number | undefined;

function linesOf(doc: Document, counter: LineCounter): LineOf {
  return (pathText) => {
    const path = parsePath(pathText);
    if (path === undefined) return undefined;
    // the field itself, or the nearest ancestor written in the file (a missing field's parent)
    for (let n = path.length; n >= 1; n--) {
      const node = doc.getIn(path.slice(0, n), true);
      const range = (node as { range?: readonly number[] } | null | undefined)?.range;
      if (range !== undefined && typeof range[0] === 'number') return counter.linePos(range[0]).line;
    }
    return undefined;
  };
}

/** Says where each issue comes from: the --set that wrote the field, or the line. */
function locate(issues: readonly FieldIssue[], sets: readonly string[], lineOf: LineOf | undefined): FieldIssue[] {
  return issues.map((issue) => {
    const set = overrideFor(issue.path, sets);
    if (set !== undefined) return { path: issue.path, message: `${issue.message} (from --set ${set})` };
    const line = lineOf?.(issue.path);
    return line === undefined ? issue : { path: issue.path, message: `${issue.message} (line ${line})` };
  });
}

function validate(raw: unknown, sets: readonly string[], source: string | undefined, lineOf: LineOf | undefined): Problem {
  const input = applyOverrides(raw, sets);
  if (!isPlainObject(input)) {
    throw invalidProblem([{ path: '(problem)', message: 'must be a mapping of fields (id, goals, traffic, workload, ...)' }], source);
  }
  const parsed = problemFileSchema.safeParse(input, { reportInput: true });
  const issues: FieldIssue[] = parsed.success ? [] : fieldIssues(parsed.error.issues, problemFileSchema, input);
  for (const c of componentIssues(input)) {
    if (!issues.some((i) => i.path === c.path)) issues.push(c);
  }
  if (parsed.success && issues.length === 0) {
    const built = buildProblem(parsed.data, input['cases'] !== undefined);
    if (built.problem !== undefined) return built.problem;
    issues.push(...built.issues);
  }
  throw invalidProblem(locate(issues, sets, lineOf), source);
}

/** A problem from YAML (or JSON) text; `source` names it in messages. */
export function parseProblem(text: string, source?: string, overrides: readonly string[] = []): Problem {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => {
      const pos = counter.linePos(e.pos[0]);
      return { path: `line ${pos.line}, column ${pos.col}`, message: `YAML syntax error: ${e.message}` };
    });
    throw invalidProblem(issues, source);
  }
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  return validate(raw, overrides, source, linesOf(doc, counter));
}

/** A problem from an already-parsed object (a JSON request body), with `--set` style overrides. */
export function problemFromObject(raw: unknown, overrides: readonly string[] = [], source?: string): Problem {
  return validate(raw, overrides, source, undefined);
}

/** A problem file from disk with `--set PATH=VALUE` overrides applied before validation. */
export function loadProblem(path: string, overrides: readonly string[] = []): Problem {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? (e as Error).message);
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `cannot read problem file ${path}: ${why}`);
  }
  return parseProblem(text, path, overrides);
}
