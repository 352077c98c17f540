/**
 * The cost of a configuration: a small arithmetic expression over dotted problem paths
 * (`gpu.replicas * gpu.slots + 0.1 * app.replicas`) and the variables `gpus` and
 * `dollars_per_hour`, parsed by hand rather than evaluated as JavaScript, since it may come
 * from an HTTP request. Numbers, paths, + - * /, unary minus and parentheses; * and / bind
 * tighter than + and -, and both associate to the left.
 */
import { ServesimError } from '../errors.js';
import { dollarsPerHour, gpuCount, type Problem } from '../model/problem.js';
import { formatPath, parsePath } from '../problem/paths.js';

/** The cost when the GPUs have no price: the batch slots the design pays for. */
export const DEFAULT_COST = 'gpu.replicas * gpu.slots';
/** The cost when they have one. */
export const DOLLARS_COST = 'dollars_per_hour';

/**
 * Names a cost may use besides the problem's paths, worked out from the whole problem: `gpus`,
 * gpu.replicas x the profile's tp (one where the profile does not say), and
 * `dollars_per_hour`, gpus x gpu.pricePerHour.
 */
const COST_VARIABLES = ['gpus', DOLLARS_COST] as const;

export type CostVariable = (typeof COST_VARIABLES)[number];

export function isCostVariable(name: string): name is CostVariable {
  return (COST_VARIABLES as readonly string[]).includes(name);
}

/** A cost variable's value for a problem, or an error naming the field it needs. */
export function costVariable(problem: Problem, name: CostVariable): number {
  const gpus = gpuCount(problem);
  if (gpus === null) throw invalid(`${name} counts GPUs, and ${problem.id} has no gpu pool`);
  if (name === 'gpus') return gpus;
  const dollars = dollarsPerHour(problem);
  if (dollars === null) {
    const gpu = problem.gpu!;
    // the pool without one: gpu's, else the decode replicas' own
    const decode = gpu.pricePerHour === undefined ? undefined : gpu.disaggregation?.decode;
    const [at, profile] = decode === undefined ? ['gpu', gpu.profile] : ['gpu.disaggregation.decode', decode.profile];
    throw invalid(
      `dollars_per_hour needs a price: ${at}.profile ${profile.name} names no GPU type with a list price ` +
        `(problems/profiles/prices.yaml); set ${at}.pricePerHour`,
    );
  }
  return dollars;
}

/** What a hint minimises when not told: dollars an hour where every problem's GPUs have a price, else slots. */
export function defaultCost(problems: readonly Problem[]): string {
  return problems.every((p) => p.gpu?.pricePerHour !== undefined) ? DOLLARS_COST : DEFAULT_COST;
}

/** Characters of a cost expression: a cost is a short formula; parsing and evaluating are linear in it. */
export const MAX_COST_LENGTH = 1_000;
/** Parentheses and signs nested in a cost: the parser and the evaluator recurse once a level. */
const MAX_COST_DEPTH = 32;

type Node =
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'path'; readonly path: string }
  | { readonly kind: 'negate'; readonly operand: Node }
  | { readonly kind: 'binary'; readonly op: '+' | '-' | '*' | '/'; readonly left: Node; readonly right: Node };

export interface CostExpression {
  readonly text: string;
  /** The paths it reads, normalized (`workload.prefixes[0].tokens`), each once. */
  readonly paths: readonly string[];
  /** The value, given each path's value. */
  evaluate(valueOf: (path: string) => number): number;
}

interface Token {
  readonly kind: 'number' | 'path' | 'op';
  readonly text: string;
  readonly at: number;
}

function invalid(message: string): ServesimError {
  return new ServesimError('SERVESIM_SWEEP_INVALID', message, 'cost');
}

const TOKEN = /\s*(?:(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*)*)|([-+*/()]))/y;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (text.slice(at).trim() !== '') {
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (m === null) {
      const start = text.length - text.slice(at).trimStart().length;
      throw invalid(`unexpected "${text[start]}" at column ${start + 1} of "${text}"; a cost takes numbers, dotted paths, + - * / and parentheses`);
    }
    const start = at + m[0].length - (m[1] ?? m[2] ?? m[3])!.length;
    if (m[1] !== undefined) tokens.push({ kind: 'number', text: m[1], at: start });
    else if (m[2] !== undefined) tokens.push({ kind: 'path', text: m[2], at: start });
    else tokens.push({ kind: 'op', text: m[3]!, at: start });
    at = TOKEN.lastIndex;
  }
  return tokens;
}

/** Parses a cost expression; a syntax error names the column. */
export function parseCost(text: string): CostExpression {
  if (text.length > MAX_COST_LENGTH) {
    throw invalid(`${text.length.toLocaleString('en')} characters; the limit is ${MAX_COST_LENGTH.toLocaleString('en')}`);
  }
  const tokens = tokenize(text);
  let pos = 0;
  let depth = 0;
  const paths: string[] = [];

  const peek = (): Token | undefined => tokens[pos];
  const fail = (what: string): never => {
    const token = peek();
    const where = token === undefined ? 'at the end' : `at column ${token.at + 1} ("${token.text}")`;
    throw invalid(`expected ${what} ${where} of "${text}"`);
  };

  const expression = (): Node => {
    let left = term();
    for (let t = peek(); t?.kind === 'op' && (t.text === '+' || t.text === '-'); t = peek()) {
      pos++;
      left = { kind: 'binary', op: t.text, left, right: term() };
    }
    return left;
  };
  const term = (): Node => {
    let left = unary();
    for (let t = peek(); t?.kind === 'op' && (t.text === '*' || t.text === '/'); t = peek()) {
      pos++;
      left = { kind: 'binary', op: t.text, left, right: unary() };
    }
    return left;
  };
  /** Parses what follows `opener` (a sign or "(") one level deeper, refusing past MAX_COST_DEPTH. */
  const nested = (opener: Token, inner: () => Node): Node => {
    if (++depth > MAX_COST_DEPTH) {
      throw invalid(`parentheses and signs nest deeper than ${MAX_COST_DEPTH} levels at column ${opener.at + 1}; the limit is ${MAX_COST_DEPTH}`);
    }
    const node = inner();
    depth--;
    return node;
  };
  const unary = (): Node => {
    const t = peek();
    if (t?.kind === 'op' && t.text === '-') {
      pos++;
      return nested(t, () => ({ kind: 'negate', operand: unary() }));
    }
    if (t?.kind === 'op' && t.text === '+') {
      pos++;
      return nested(t, unary);
    }
    return primary();
  };
  const primary = (): Node => {
    const t = peek();
    if (t === undefined) return fail('a number, a path or "("');
    if (t.kind === 'number') {
      pos++;
      return { kind: 'number', value: Number(t.text) };
    }
    if (t.kind === 'path') {
      pos++;
      const path = formatPath(parsePath(t.text)!);
      if (!paths.includes(path)) paths.push(path);
      return { kind: 'path', path };
    }
    if (t.text === '(') {
      pos++;
      const inner = nested(t, expression);
      if (peek()?.text !== ')') fail('")"');
      pos++;
      return inner;
    }
    return fail('a number, a path or "("');
  };

  if (tokens.length === 0) throw invalid('is empty; e.g. gpu.replicas * gpu.slots');
  const root = expression();
  if (pos < tokens.length) fail('an operator');

  const evaluate = (node: Node, valueOf: (path: string) => number): number => {
    switch (node.kind) {
      case 'number':
        return node.value;
      case 'path':
        return valueOf(node.path);
      case 'negate':
        return -evaluate(node.operand, valueOf);
      case 'binary': {
        const a = evaluate(node.left, valueOf);
        const b = evaluate(node.right, valueOf);
        if (node.op === '+') return a + b;
        if (node.op === '-') return a - b;
        if (node.op === '*') return a * b;
        return a / b;
      }
    }
  };
  return { text, paths, evaluate: (valueOf) => evaluate(root, valueOf) };
}

/**
 * Reads a number at a dotted path of the typed problem (times in microseconds, as the engine
 * has them), or undefined when there is none there. Own fields only: `constructor.length` is
 * no field of a problem, though every object inherits it.
 */
export function numberAt(root: unknown, path: string): number | undefined {
  let node: unknown = root;
  for (const seg of parsePath(path) ?? []) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, seg)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[seg];
  }
  return typeof node === 'number' && Number.isFinite(node) ? node : undefined;
}
