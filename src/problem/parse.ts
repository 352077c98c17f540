/**
 * Problem files in, typed Problems out: YAML (or JSON) text, a file on disk, or an object an
 * HTTP client sent. Every path goes through the same steps: overrides, field validation,
 * cross-field checks, conversion. Every problem found is reported at once, each naming its
 * field and, for text input, its line.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { Composer, CST, isAlias, isScalar, Lexer, LineCounter, Parser, visit, type Document } from 'yaml';
import { invalidProblem, ServesimError, type FieldIssue } from '../errors.js';
import type { Problem } from '../model/problem.js';
import type { Trace } from '../model/trace.js';
import { depthText, INPUT_LIMITS, nodesText, shapeExcess } from './bounds.js';
import { buildProblem, componentIssues } from './build.js';
import { readInputBytes } from './input-file.js';
import { fieldIssues } from './issues.js';
import { applyOverrides, overrideFor, type OverrideInput } from './overrides.js';
import { isPlainObject, parsePath } from './schema-walk.js';
import { problemFileSchema } from './schema.js';
import { fileInProblems } from './source.js';
import { loadTrace, TRACE_FIELD } from './trace.js';

export { readInputBytes } from './input-file.js';
export { selectCases } from './scenarios.js';

/** Input past a bound, at the place it was passed (`line L, column C`, or the field), as its one issue. */
function tooLarge(source: string | undefined, issue: FieldIssue): ServesimError {
  const err = new ServesimError('SERVESIM_INPUT_TOO_LARGE', `${source === undefined ? '' : `${source}: `}${issue.path}: ${issue.message}`);
  return Object.assign(err, { issues: [issue] });
}

/** Where an offset of YAML text is, as issues name it. */
function at(counter: LineCounter, offset: number): string {
  const pos = counter.linePos(offset);
  return `line ${pos.line}, column ${pos.col}`;
}

/**
 * A problem, sweep or other input file's text: refused, naming the reason, when it is not a
 * regular file (a device or FIFO would never end, or block) or is over `INPUT_LIMITS.bytes`.
 * `what` and `shown` name it in messages ("problem file", the path as the user wrote it).
 */
export function readInputFile(path: string, what: string, shown: string = path): string {
  return readInputBytes(path, what, shown, INPUT_LIMITS.bytes).toString('utf8');
}

/** Lexer tokens that each start a node: scalars (a plain one's marker), aliases, flow collections. */
const NODE_TOKENS: ReadonlySet<string> = new Set(['scalar', 'single-quoted-scalar', 'double-quoted-scalar', 'alias', 'flow-map-start', 'flow-seq-start']);

/**
 * The CST of YAML text, token by token, refused as soon as it passes the node or depth bound:
 * the parser keeps its own stack, but building the document recurses once a level and costs
 * per node, so both are checked before the document is built.
 */
function* boundedTokens(text: string, counter: LineCounter, source: string | undefined): Generator<CST.Token> {
  const parser = new Parser(counter.addNewLine);
  // Parser.parse() marks the first line's start; feeding it token by token, this does
  counter.addNewLine(0);
  let nodes = 0;
  for (const lexeme of new Lexer().lex(text)) {
    if (NODE_TOKENS.has(CST.tokenType(lexeme) ?? '') && ++nodes > INPUT_LIMITS.nodes) throw tooLarge(source, { path: at(counter, parser.offset), message: nodesText() });
    yield* parser.next(lexeme);
    // the stack holds the document, then a collection a level, then perhaps the scalar being read
    const levels = parser.stack.length - (CST.isCollection(parser.stack[parser.stack.length - 1]) ? 1 : 2);
    if (levels > INPUT_LIMITS.depth) throw tooLarge(source, { path: at(counter, parser.offset), message: depthText() });
  }
  yield* parser.end();
}

/**
 * Duplicate keys, found in one pass: the parser's own check (uniqueKeys) compares every pair
 * of keys in a mapping, 14 s for 32,000 keys.
 */
function duplicateKeys(doc: Document, counter: LineCounter): FieldIssue[] {
  const issues: FieldIssue[] = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) issues.push({ path: at(counter, pair.key.range?.[0] ?? 0), message: 'YAML syntax error: Map keys must be unique' });
        seen.add(pair.key.value);
      }
    },
  });
  return issues;
}

/**
 * Aliases that name no anchor set before them, found in one pass in the order the parser
 * resolves them: toJS would throw a ReferenceError, as it does for too many expansions.
 */
function unresolvedAliases(doc: Document, counter: LineCounter): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const anchors = new Set<string>();
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node) && !anchors.has(node.source)) {
        issues.push({ path: at(counter, node.range?.[0] ?? 0), message: `YAML syntax error: alias *${node.source} refers to no anchor (&${node.source} must come before it)` });
      } else if (!isAlias(node) && node.anchor !== undefined) anchors.add(node.anchor);
    },
  });
  return issues;
}

/** A value read from YAML text, and where each of its fields is written. */
export interface YamlValue {
  readonly value: unknown;
  readonly lineOf: LineOf;
}

/**
 * YAML (or JSON) text as a value, within INPUT_LIMITS' nodes, depth and aliases (its bytes are
 * bounded where it is read): past one it is refused at the place it was passed, naming the
 * bound (SERVESIM_INPUT_TOO_LARGE); syntax errors, each at its line, go to `invalid`, which
 * makes the caller's error (an invalid problem, an invalid sweep). `source` names the text.
 */
export function readYaml(text: string, source: string | undefined, invalid: (issues: FieldIssue[]) => ServesimError): YamlValue {
  const counter = new LineCounter();
  // duplicate keys are found by duplicateKeys, in one pass; warnings become issues, not stderr
  const composer = new Composer({ uniqueKeys: false, logLevel: 'error' });
  let doc: Document.Parsed | undefined;
  for (const composed of composer.compose(boundedTokens(text, counter, source), true, text.length)) {
    if (doc !== undefined) throw invalid([{ path: at(counter, composed.range[0]), message: 'YAML syntax error: more than one document' }]);
    doc = composed;
  }
  const issues = doc!.errors.map((e) => ({ path: at(counter, e.pos[0]), message: `YAML syntax error: ${e.message}` }));
  // a tag the schema does not know (!!js/function, !x) would silently be read as a string
  for (const w of doc!.warnings) issues.push({ path: at(counter, w.pos[0]), message: `YAML: ${w.message}` });
  issues.push(...duplicateKeys(doc!, counter), ...unresolvedAliases(doc!, counter));
  if (issues.length > 0) throw invalid(issues);
  let value: unknown;
  try {
    value = doc!.toJS({ maxAliasCount: INPUT_LIMITS.aliases });
  } catch (err) {
    // yaml throws a plain ReferenceError when the aliases expand past the count
    if (!(err instanceof ReferenceError)) throw err;
    let first = 0;
    visit(doc!, {
      Alias(_key, alias) {
        first = alias.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    const message = `aliases (*name) expand more than ${INPUT_LIMITS.aliases} times; the limit is ${INPUT_LIMITS.aliases}`;
    throw tooLarge(source, { path: at(counter, first), message });
  }
  return { value, lineOf: linesOf(doc!, counter) };
}

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

/** Says where each issue comes from: the --set that wrote the field (or one it is worked out from), or the line. */
function locate(issues: readonly FieldIssue[], sets: readonly OverrideInput[], lineOf: LineOf | undefined): FieldIssue[] {
  return issues.map((issue) => {
    const changed = [issue.path, ...(issue.from ?? [])].find((path) => overrideFor(path, sets) !== undefined);
    if (changed !== undefined) return { path: changed, message: `${issue.message} (from --set ${overrideFor(changed, sets)})` };
    const line = lineOf?.(issue.path);
    return line === undefined ? issue : { path: issue.path, message: `${issue.message} (line ${line})` };
  });
}

/**
 * Where a relative `traffic.trace` resolves: `file`, the folder of the problem file that wrote
 * it; `set`, the folder a `--set traffic.trace=FILE` is relative to (the working directory).
 */
export interface TraceDirs {
  readonly file: string;
  readonly set: string;
}

const INSIDE_PROBLEMS = "must be a relative path inside servesim's problems/ folder, e.g. traces/mooncake-conversation.jsonl: a problem sent as an object (an HTTP request, a queue message, a sweep) names only the traces shipped there";

/**
 * The file a `traffic.trace` names, or the issue that stops it. With `dirs`, a relative path
 * resolves against the folder of whoever wrote it (the problem file, or --set); without (a
 * problem sent as an object), only a relative path inside problems/ is taken.
 */
function tracePath(written: string, fromSet: boolean, dirs: TraceDirs | undefined): { path: string } | { issue: FieldIssue } {
  const issue = (message: string): { issue: FieldIssue } => ({ issue: { path: TRACE_FIELD, message } });
  if (written.includes('\0')) return issue('must be a file path (got a NUL character)');
  if (dirs !== undefined) return { path: resolve(fromSet ? dirs.set : dirs.file, written) };
  const parts = written.split(/[\\/]/);
  if (isAbsolute(written) || /^[A-Za-z]:/.test(written) || written.startsWith('\\') || parts.includes('..')) return issue(`${INSIDE_PROBLEMS}; got ${JSON.stringify(written)}`);
  // at its real path: a symlink inside problems/ does not lead out of it
  const path = fileInProblems(written);
  return path === undefined ? issue(`${INSIDE_PROBLEMS}; got ${JSON.stringify(written)}`) : { path };
}

/**
 * The trace the problem names, or the issue that stops it (a path refused, a file that cannot
 * be read or parsed); one too large is SERVESIM_INPUT_TOO_LARGE, as a problem file would be.
 */
function traceOf(written: string, sets: readonly OverrideInput[], dirs: TraceDirs | undefined, source: string | undefined): { trace: Trace } | { issue: FieldIssue } {
  const where = tracePath(written, overrideFor(TRACE_FIELD, sets) !== undefined, dirs);
  if ('issue' in where) return where;
  try {
    return { trace: loadTrace(where.path, written) };
  } catch (err) {
    if (!(err instanceof ServesimError) || err.path !== TRACE_FIELD) throw err;
    const message = err.message.slice(TRACE_FIELD.length + 2);
    // an object's trace is looked for in problems/, wherever the caller found the object
    const looked = dirs === undefined && err.code === 'SERVESIM_FILE_UNREADABLE' ? " (a problem sent as an object names a trace inside servesim's problems/ folder)" : '';
    const issue = { path: TRACE_FIELD, message: `${message}${looked}` };
    if (err.code === 'SERVESIM_INPUT_TOO_LARGE') throw tooLarge(source, issue);
    return { issue };
  }
}

function validate(raw: unknown, sets: readonly OverrideInput[], source: string | undefined, lineOf: LineOf | undefined, dirs: TraceDirs | undefined): Problem {
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
    // read only once the rest of the problem holds: a trace is megabytes
    const written = parsed.data.traffic.trace;
    const found = written === undefined ? { trace: null } : traceOf(written, sets, dirs, source);
    if ('issue' in found) {
      issues.push(found.issue);
    } else {
      const built = buildProblem(parsed.data, input['cases'] !== undefined, found.trace);
      if (built.problem !== undefined) return built.problem;
      issues.push(...built.issues);
    }
  }
  throw invalidProblem(locate(issues, sets, lineOf), source);
}

/**
 * A problem from YAML (or JSON) text; `source` names it in messages. A relative traffic.trace
 * resolves against `traceDirs` (default: the working directory, for both the text and --set).
 */
export function parseProblem(text: string, source?: string, overrides: readonly string[] = [], traceDirs?: TraceDirs): Problem {
  const { value, lineOf } = readYaml(text, source, (issues) => invalidProblem(issues, source));
  const cwd = process.cwd();
  return validate(value, overrides, source, lineOf, traceDirs ?? { file: cwd, set: cwd });
}

/**
 * A problem from an already-parsed object (a JSON request body, a queue message), with
 * overrides (`--set` text, or a grid point's parsed ones). Its traffic.trace, from the object or an override, must be a relative path
 * inside servesim's problems/ folder, and resolves there; a caller that read the object from a
 * file of its own passes `traceDirs` to resolve it as loadProblem does.
 */
export function problemFromObject(raw: unknown, overrides: readonly OverrideInput[] = [], source?: string, traceDirs?: TraceDirs): Problem {
  // an object from a caller (a request body, a queue message) is held to the bounds of YAML text
  const excess = shapeExcess(raw);
  if (excess !== undefined) throw tooLarge(source, { path: '(problem)', message: excess });
  return validate(raw, overrides, source, undefined, traceDirs);
}

/**
 * A problem file from disk with `--set PATH=VALUE` overrides applied before validation. A
 * relative traffic.trace resolves against the file's folder, or, given by --set, against the
 * working directory.
 */
export function loadProblem(path: string, overrides: readonly string[] = []): Problem {
  return parseProblem(readInputFile(path, 'problem file'), path, overrides, { file: dirname(resolve(path)), set: process.cwd() });
}
