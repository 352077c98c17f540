/**
 * Generators and checks for the input fuzz test (issue 12). Arbitraries come from the problem
 * schema (settablePaths and the schema walk), the shipped problems and hostile values; the
 * checks say what every call into a parse entry point must end with.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { ServesimError } from '../src/errors.js';
import { parseCost } from '../src/hint/cost.js';
import type { Problem } from '../src/model/problem.js';
import type { Trace } from '../src/model/trace.js';
import { BUILTIN_CASE_NAMES, LIMITS } from '../src/problem/limits.js';
import { settablePaths } from '../src/problem/overrides.js';
import { parseProblem, problemFromObject } from '../src/problem/parse.js';
import { BUILTIN_PROFILES } from '../src/problem/profiles.js';
import { formatPath, nodeOf, parsePath, schemaAt, unwrap, type PathSegment } from '../src/problem/schema-walk.js';
import { problemFileSchema } from '../src/problem/schema.js';
import { DEFAULT_MAX_INSTANCES, sweepFromObject, type Sweep } from '../src/sweep/spec.js';

// ---------------------------------------------------------------------------------------------
// The shipped problems: the seeds every mutation starts from

const problemsDir = new URL('../problems/', import.meta.url);
const SHIPPED = readdirSync(problemsDir)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => {
    const text = readFileSync(new URL(f, problemsDir), 'utf8');
    return { id: f.replace(/\.yaml$/, ''), text, raw: parseYaml(text) as Record<string, unknown> };
  });
const shippedIds = SHIPPED.map((s) => s.id);

// ---------------------------------------------------------------------------------------------
// What the schema says: its paths, and the names its enums and literals take

/** Keys that reach Object.prototype or shadow its methods when a parser is careless. */
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__'];
const SOME_CASES = [...BUILTIN_CASE_NAMES, 'flash-crowd', 'tenant-burst'];

/** Every string an enum or literal of the schema takes (policies, targets, kinds, dists...). */
function schemaWords(): string[] {
  const words = new Set<string>();
  const seen = new Set<z.ZodType>();
  const walk = (schema: z.ZodType): void => {
    const s = unwrap(schema);
    if (seen.has(s)) return;
    seen.add(s);
    if (s instanceof z.ZodEnum) for (const o of s.options) words.add(String(o));
    else if (s instanceof z.ZodLiteral) for (const v of s.values) words.add(String(v));
    else if (s instanceof z.ZodObject) for (const c of Object.values(s.shape as Record<string, z.ZodType>)) walk(c);
    else if (s instanceof z.ZodUnion) for (const o of s.options as readonly z.ZodType[]) walk(o);
    else if (s instanceof z.ZodArray) walk(s.element as z.ZodType);
    else if (s instanceof z.ZodRecord) walk(s.valueType as z.ZodType);
  };
  walk(problemFileSchema);
  return [...words, ...Object.keys(BUILTIN_PROFILES), ...SOME_CASES, 'all'];
}
const WORDS = schemaWords();

/**
 * Field paths as segments: settablePaths() and, below each, what the schema walk finds (list
 * entries, case names under scenarios, the fields of a {dist: ...} distribution).
 */
function schemaPaths(): PathSegment[][] {
  const out = new Map<string, PathSegment[]>();
  const add = (path: PathSegment[], depth: number): void => {
    out.set(formatPath(path), path);
    if (depth === 0) return;
    const at = schemaAt(problemFileSchema, undefined, path);
    if (at === undefined) return;
    // {} picks a union's mapping branch (a distribution written as {dist: ...})
    const node = nodeOf(at.schema, {});
    const children: PathSegment[] =
      node.kind === 'object' ? [...node.keys] : node.kind === 'array' ? [0, 1] : node.kind === 'record' ? SOME_CASES : [];
    for (const c of children) add([...path, c], depth - 1);
  };
  for (const text of settablePaths()) add(text.split('.'), 3);
  return [...out.values()];
}
const PATHS = schemaPaths();

function schemaOf(path: readonly PathSegment[]): z.ZodType | undefined {
  return schemaAt(problemFileSchema, undefined, path)?.schema;
}

// ---------------------------------------------------------------------------------------------
// Values

const EXTREME_NUMBERS = [
  0, -0, -1, 1, 0.5, 1e-300, 1e300, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 2 ** 53 + 2, -(2 ** 31), -(2 ** 32),
  NaN, Infinity, -Infinity, Number.MAX_VALUE, Number.MIN_VALUE, 4e9, 4000, 100_000, 100_001,
];
const extremeNumber = fc.constantFrom(...EXTREME_NUMBERS);
const number = fc.oneof(
  { weight: 3, arbitrary: extremeNumber },
  { weight: 2, arbitrary: fc.integer({ min: -2, max: 300 }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
);

/** How a number reads in YAML (`.nan`, `.inf`) and in plain text. */
function numberText(n: number): string {
  if (Number.isNaN(n)) return '.nan';
  if (n === Infinity) return '.inf';
  if (n === -Infinity) return '-.inf';
  return Object.is(n, -0) ? '-0' : String(n);
}

const UNITS = ['us', 'µs', 'ms', 's', 'm', 'h', '', '%', ' s', 'sec', 'S', 'd', 'msms'];
/** Durations and percentages, right and wrong: '30s', '1e300h', '0.5us', '4294967296us'. */
const unitText = fc
  .tuple(
    fc.oneof(number.map(numberText), fc.constantFrom('1.5', '0.0000001', '1e3', '00', '.5', '-5', '1_000', '0x10', '9'.repeat(30))),
    fc.constantFrom(...UNITS),
  )
  .map(([n, u]) => `${n}${u}`);

/** Too large for any field: rare, since each costs the parsers real time. */
const HUGE = 'a'.repeat(100_000);

/** Durations as a problem file writes them: '250ms', '30s'. */
const plainDuration = fc.tuple(fc.integer({ min: 0, max: 5000 }), fc.constantFrom('us', 'ms', 's', 'm')).map(([n, u]) => `${n}${u}`);

const string = fc.oneof(
  { weight: 30, arbitrary: unitText },
  { weight: 30, arbitrary: plainDuration },
  { weight: 30, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 20, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 10, arbitrary: fc.constantFrom(...HOSTILE_KEYS, '', ' ', '\u0000', '\uFEFF') },
  { weight: 1, arbitrary: fc.constant(HUGE) },
);

const KEY = fc.oneof(fc.constantFrom(...HOSTILE_KEYS, ...WORDS, ''), fc.string({ maxLength: 8 }));

/** An object with own data properties only, `__proto__` included, as JSON.parse makes them. */
function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
  return out;
}

/** Anything a JSON body or a YAML file could hold, and extreme numbers JSON cannot. */
const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: number },
    { weight: 4, arbitrary: string },
    { weight: 1, arbitrary: fc.constantFrom(null, true, false) },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.array(fc.tuple(KEY, tie('value')), { maxLength: 3 }).map(objectOf) },
  ),
})).value;

const schemaValueCache = new Map<z.ZodType, fc.Arbitrary<unknown>>();

/** Values shaped like what the schema takes at a field, right or nearly so. */
function schemaValue(schema: z.ZodType | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined || depth > 3) return hostileValue;
  const s = unwrap(schema);
  const cached = schemaValueCache.get(s);
  if (cached !== undefined) return cached;
  let arb: fc.Arbitrary<unknown>;
  if (s instanceof z.ZodNumber) arb = fc.oneof(number, fc.integer({ min: 0, max: 64 }), fc.double({ min: 0, max: 2, noNaN: true }));
  else if (s instanceof z.ZodString) arb = string;
  else if (s instanceof z.ZodEnum) arb = fc.constantFrom(...s.options.map(String));
  else if (s instanceof z.ZodLiteral) arb = fc.constantFrom(...[...s.values].map(String));
  else if (s instanceof z.ZodBoolean) arb = fc.boolean();
  else if (s instanceof z.ZodUnion) arb = fc.oneof(...(s.options as readonly z.ZodType[]).map((o) => schemaValue(o, depth + 1)));
  else if (s instanceof z.ZodArray) arb = fc.array(schemaValue(s.element as z.ZodType, depth + 1), { maxLength: 3 });
  else if (s instanceof z.ZodRecord) {
    arb = fc.array(fc.tuple(fc.constantFrom(...SOME_CASES), schemaValue(s.valueType as z.ZodType, depth + 1)), { maxLength: 2 }).map(objectOf);
  } else if (s instanceof z.ZodObject) {
    const shape = s.shape as Record<string, z.ZodType>;
    const fields = Object.entries(shape).map(([k, c]) => fc.tuple(fc.constant(k), schemaValue(c, depth + 1)));
    arb = fc.subarray(fields).chain((chosen) => fc.tuple(...chosen)).map(objectOf);
  } else arb = hostileValue;
  schemaValueCache.set(s, arb);
  return arb;
}

/** A value for a field: mostly what the schema expects there, sometimes anything. */
function valueFor(path: readonly PathSegment[]): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: schemaValue(schemaOf(path)) }, { weight: 1, arbitrary: hostileValue });
}

// ---------------------------------------------------------------------------------------------
// Paths: the schema's, and hostile variations on them

const INDEXES = [0, 1, 5, 16, 1000, 2 ** 31, 2 ** 32, 2 ** 53];

/** A schema path, maybe with a hostile segment in it or instead of one of its own, a list index out of range, or made very deep. */
const fieldPath: fc.Arbitrary<PathSegment[]> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PATHS) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...PATHS), fc.constantFrom(...HOSTILE_KEYS), fc.nat())
      .map(([p, k, at]) => [...p.slice(0, at % (p.length + 1)), k, ...p.slice(at % (p.length + 1))]),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...PATHS), fc.constantFrom(...HOSTILE_KEYS), fc.nat())
      .map(([p, k, at]) => p.map((seg, i) => (i === at % p.length ? k : seg))),
  },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PATHS), fc.constantFrom(...INDEXES)).map(([p, i]) => [...p, i]) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...PATHS), fc.array(fc.oneof(KEY, fc.constantFrom(...INDEXES)), { minLength: 1, maxLength: 40 })).map(([p, rest]) => [...p, ...rest]),
  },
);

// ---------------------------------------------------------------------------------------------
// Problems: a shipped problem and a few edits to it

type Edit =
  | { readonly op: 'set'; readonly path: PathSegment[]; readonly value: unknown }
  | { readonly op: 'delete'; readonly path: PathSegment[] }
  /** The same object at two places: YAML writes it as an anchor and an alias. */
  | { readonly op: 'share'; readonly from: PathSegment[]; readonly to: PathSegment[] }
  /** A list of `count` copies of one value: 150,000 short entries is what a 1 MB request body holds. */
  | { readonly op: 'fill'; readonly path: PathSegment[]; readonly count: number; readonly value: unknown };

interface ProblemCase {
  readonly base: string;
  /** A whole input that is not a mapping, instead of the edited problem. */
  readonly root?: unknown;
  readonly edits: readonly Edit[];
}

/** The paths whose schema is a list (cases, failures, prefixes...). */
const LIST_PATHS = PATHS.filter((p) => {
  const at = schemaOf(p);
  return at !== undefined && nodeOf(at, []).kind === 'array';
});

const edit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 600, arbitrary: fieldPath.chain((path) => valueFor(path).map((value): Edit => ({ op: 'set', path, value }))) },
  { weight: 200, arbitrary: fieldPath.map((path): Edit => ({ op: 'delete', path })) },
  // an unknown key at any depth: the start of a schema path, then a made-up key
  {
    weight: 100,
    arbitrary: fc
      .tuple(fc.constantFrom(...PATHS), fc.nat(), KEY, hostileValue)
      .map(([p, depth, k, value]): Edit => ({ op: 'set', path: [...p.slice(0, depth % p.length), k], value })),
  },
  { weight: 100, arbitrary: fc.tuple(fieldPath, fieldPath).map(([from, to]): Edit => ({ op: 'share', from, to })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...LIST_PATHS), fc.constantFrom(1000, 150_000))
      .chain(([path, count]) => valueFor([...path, 0]).map((value): Edit => ({ op: 'fill', path, count, value }))),
  },
);

const problemCase: fc.Arbitrary<ProblemCase> = fc.oneof(
  { weight: 20, arbitrary: fc.record({ base: fc.constantFrom(...shippedIds), edits: fc.array(edit, { maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ base: fc.constantFrom(...shippedIds), root: hostileValue, edits: fc.constant([]) }) },
);

function own(x: unknown, key: PathSegment): unknown {
  return typeof x === 'object' && x !== null && Object.hasOwn(x, key) ? (x as Record<PathSegment, unknown>)[key] : undefined;
}

function define(x: object, key: PathSegment, value: unknown): void {
  // an array's length is not a field; huge indexes would make sparse lists of billions of holes
  if (Array.isArray(x) && (key === 'length' || (typeof key === 'number' && key > 100))) return;
  Object.defineProperty(x, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The parent of `path` in `root`, made where missing. */
function parentOf(root: Record<string, unknown>, path: readonly PathSegment[]): object {
  let node: object = root;
  for (let i = 0; i < path.length - 1; i++) {
    let next = own(node, path[i]!);
    if (typeof next !== 'object' || next === null) {
      next = typeof path[i + 1] === 'number' ? [] : {};
      define(node, path[i]!, next);
    }
    node = next as object;
  }
  return node;
}

/** The problem object a case describes: a fresh copy of the shipped one, edited. */
function buildProblem(c: ProblemCase): unknown {
  if ('root' in c) return c.root;
  const root = structuredClone(SHIPPED.find((s) => s.id === c.base)!.raw);
  for (const e of c.edits) {
    if (e.op === 'share') {
      const value = e.from.reduce<unknown>((x, seg) => own(x, seg), root);
      if (typeof value === 'object' && value !== null && e.to.length > 0) define(parentOf(root, e.to), e.to.at(-1)!, value);
    } else if (e.path.length > 0) {
      const parent = parentOf(root, e.path);
      const last = e.path.at(-1)!;
      if (e.op === 'set') define(parent, last, e.value);
      else if (e.op === 'fill') define(parent, last, new Array<unknown>(e.count).fill(e.value));
      else delete (parent as Record<PathSegment, unknown>)[last];
    }
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// YAML text: an edited problem written out, then roughened

const YAML_SYNTAX = fc.string({ unit: fc.constantFrom(...':{}[]&*!|>\'"#%@`-?,\t\n ~.0a'.split('')), maxLength: 8 });
const TAGS = ['!!str', '!!int', '!!float', '!!bool', '!!null', '!!binary', '!!set', '!!omap', '!!pairs', '!!timestamp', '!!map', '!!seq', '!custom', '!<tag:x>'];

/** One change to the text of a YAML document, as data so that a counterexample reads well. */
type TextEdit =
  | { readonly add: 'start' | 'end'; readonly text: string }
  | { readonly newlines: '\r\n' }
  | { readonly indentWith: '\t' }
  | { readonly tag: string; readonly at: number }
  | { readonly splice: string; readonly where: number; readonly cut: number }
  | { readonly repeatLine: number };

function nested(depth: number, open: string, inner: string, close: string): string {
  return `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
}

const billionLaughs = `l0: &l0 [x, x]\n${Array.from({ length: 20 }, (_, i) => `l${i + 1}: &l${i + 1} [*l${i}, *l${i}]`).join('\n')}`;

const textEdit: fc.Arbitrary<TextEdit> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.constantFrom<TextEdit>(
      { add: 'start', text: '%YAML 1.1\n---\n' },
      { add: 'start', text: '%YAML 1.2\n%TAG !x! tag:example.com,2000:\n---\n' },
      { add: 'start', text: '\uFEFF' },
      { add: 'end', text: '\nbase: &b {replicas: 2}\nmerged: {<<: *b, slots: 4}\n' },
      { add: 'end', text: '\n---\nid: second-document\n' },
      { add: 'end', text: '\n...\n' },
      { add: 'end', text: `\n${billionLaughs}\n` },
      { add: 'end', text: '\nself: &s [*s]\n' },
      { add: 'end', text: '\nref: *nowhere\n' },
      { add: 'end', text: '\n<<: {gpu: {replicas: 2}}\n' },
      { add: 'end', text: '\n? [complex, key]\n: 1\n' },
      { add: 'end', text: '\n__proto__: {polluted: 1}\n' },
      { add: 'end', text: '\ntitle: duplicate\n' },
      { newlines: '\r\n' },
      { indentWith: '\t' },
    ),
  },
  {
    weight: 10,
    arbitrary: fc
      .tuple(fc.constantFrom(10, 100, 1000), fc.constantFrom(['[', '1', ']'], ['{a: ', '1', '}'], ['- ', '1', '']))
      .map(([d, [o, i, c]]): TextEdit => ({ add: 'end', text: `\nzz: ${nested(d, o!, i!, c!)}\n` })),
  },
  { weight: 10, arbitrary: fc.record({ tag: fc.constantFrom(...TAGS), at: fc.nat() }) },
  { weight: 10, arbitrary: fc.record({ splice: YAML_SYNTAX, where: fc.double({ min: 0, max: 1, noNaN: true }), cut: fc.nat({ max: 6 }) }) },
  { weight: 5, arbitrary: fc.record({ repeatLine: fc.nat() }) },
  // a megabyte of text, or ten thousand levels of nesting: rare, as each takes the parser a while
  { weight: 1, arbitrary: fc.constantFrom<TextEdit>({ add: 'end', text: `\ntitle: ${'x'.repeat(1_000_000)}\n` }, { add: 'end', text: `\nzz: ${nested(10_000, '[', '1', ']')}\n` }) },
);

function applyTextEdit(t: string, e: TextEdit): string {
  if ('add' in e) return e.add === 'start' ? `${e.text}${t}` : `${t}${e.text}`;
  if ('newlines' in e) return t.replace(/\n/g, e.newlines);
  if ('indentWith' in e) return t.replace(/ {2}/g, e.indentWith);
  if ('tag' in e) {
    const spots = [...t.matchAll(/: /g)];
    const spot = spots[e.at % Math.max(1, spots.length)];
    return spot?.index === undefined ? t : `${t.slice(0, spot.index + 2)}${e.tag} ${t.slice(spot.index + 2)}`;
  }
  if ('splice' in e) {
    const at = Math.floor(e.where * t.length);
    return `${t.slice(0, at)}${e.splice}${t.slice(at + e.cut)}`;
  }
  const lines = t.split('\n');
  lines.splice(e.repeatLine % lines.length, 0, lines[e.repeatLine % lines.length]!);
  return lines.join('\n');
}

interface YamlCase {
  readonly problem: ProblemCase;
  readonly style: {
    readonly indent: number;
    readonly collectionStyle: 'any' | 'block' | 'flow';
    readonly defaultStringType: 'PLAIN' | 'QUOTE_DOUBLE' | 'QUOTE_SINGLE';
  };
  readonly textEdits: readonly TextEdit[];
  readonly sets: readonly string[];
}

// ---------------------------------------------------------------------------------------------
// --set PATH=VALUE text

const valueText: fc.Arbitrary<string> = fc.oneof(
  { weight: 160, arbitrary: number.map(numberText) },
  { weight: 160, arbitrary: string.filter((s) => s.length < 1000) },
  { weight: 80, arbitrary: hostileValue.map(flowYaml) },
  {
    weight: 40,
    arbitrary: fc.constantFrom(
      '{__proto__: {polluted: 1}}',
      '{constructor: {prototype: {polluted: 1}}}',
      '&a [*a]',
      '*nowhere',
      '!!binary aGk=',
      '!!js/function "() => 1"',
      '[1, 2',
      '{a: 1',
      '|',
      '"unterminated',
      '0x7fffffff',
      '0o17',
      '1_000',
      '~',
      '2001-12-14',
    ),
  },
  { weight: 40, arbitrary: fc.constantFrom(10, 100, 1000).map((d) => nested(d, '[', '1', ']')) },
  // ten thousand entries: one issue each, about half a second
  { weight: 1, arbitrary: fc.constant(`[${'x, '.repeat(10_000)}x]`) },
);

const pathText: fc.Arbitrary<string> = fc.oneof(
  { weight: 1500, arbitrary: fieldPath.map(formatPath) },
  { weight: 250, arbitrary: fc.constantFrom('gpu..slots', 'gpu.slots[', '[0]', '.gpu', 'gpu.', 'a[99999999999999999999]', 'failures[-1]', ' gpu . slots ') },
  { weight: 250, arbitrary: fc.string({ maxLength: 20 }) },
  // "did you mean" compares it with every field name: about half a second each
  { weight: 1, arbitrary: fc.constant(HUGE) },
);

/** A value as `--set` takes it: YAML on one line, flow style. */
function flowYaml(v: unknown): string {
  return stringifyYaml(v, { collectionStyle: 'flow', lineWidth: 0 }).trim();
}

const setText: fc.Arbitrary<string> = fc.oneof(
  { weight: 16, arbitrary: fieldPath.chain((p) => valueFor(p).map((v) => `${formatPath(p)}=${flowYaml(v)}`)) },
  { weight: 6, arbitrary: fc.tuple(pathText, valueText).map(([p, v]) => `${p}=${v}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: pathText },
);

const yamlCase: fc.Arbitrary<YamlCase> = fc.record({
  problem: problemCase,
  style: fc.record({
    indent: fc.integer({ min: 1, max: 8 }),
    collectionStyle: fc.constantFrom('any' as const, 'block' as const, 'flow' as const),
    defaultStringType: fc.constantFrom('PLAIN' as const, 'QUOTE_DOUBLE' as const, 'QUOTE_SINGLE' as const),
  }),
  textEdits: fc.array(textEdit, { maxLength: 3 }),
  sets: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(setText, { minLength: 1, maxLength: 3 }) }),
});

function yamlText(c: YamlCase): string {
  const text = stringifyYaml(buildProblem(c.problem), { ...c.style, lineWidth: 0 });
  return c.textEdits.reduce(applyTextEdit, text);
}

// ---------------------------------------------------------------------------------------------
// Sweeps

/** Mostly what the field takes, sometimes anything. */
function mostly<T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown> = hostileValue): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 8, arbitrary: good }, { weight: 1, arbitrary: bad });
}

/** A grid value: numbers and names as written; a mapping or list only as its YAML text. */
function gridValue(path: readonly PathSegment[]): fc.Arbitrary<number | string> {
  return valueFor(path).map((v) => (typeof v === 'number' || typeof v === 'string' ? v : flowYaml(v)));
}

/** One axis of a grid: a small list or range of values for a field, or a huge range. */
const gridAxis: fc.Arbitrary<readonly [string, unknown]> = fc.oneof(
  { weight: 600, arbitrary: fieldPath.chain((p) => fc.tuple(fc.constant(formatPath(p)), fc.array(gridValue(p), { minLength: 1, maxLength: 3 }))) },
  { weight: 100, arbitrary: fc.tuple(pathText, fc.array(fc.oneof(number, string), { minLength: 1, maxLength: 3 })) },
  {
    weight: 200,
    arbitrary: fc.tuple(
      fieldPath.map(formatPath),
      fc.tuple(number, fc.integer({ min: 0, max: 3 }), fc.double({ min: 0.001, max: 100, noNaN: true })).map(([from, n, step]) => ({ from, to: from + n * step, step })),
    ),
  },
  // one line, billions of values: must be refused before any is made
  {
    weight: 50,
    arbitrary: fc.tuple(
      fieldPath.map(formatPath),
      fc.tuple(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.constantFrom(1e-9, 1e-300, Number.MIN_VALUE, 1e-6)).map(([from, step]) => ({ from, to: from + 1e6, step })),
    ),
  },
  { weight: 50, arbitrary: fc.tuple(fc.oneof(pathText, fc.constantFrom(...HOSTILE_KEYS)), hostileValue) },
  // nearly a whole 1 MB request body in one path
  { weight: 1, arbitrary: fc.tuple(fc.constant('a'.repeat(900_000)), fc.constant([1])) },
);

interface SweepCase {
  /** The sweep's fields, or a whole input that is not a mapping. */
  readonly sweep: unknown;
  /** An edited shipped problem to send inline as `problem` (built when run, so it prints short). */
  readonly inline?: ProblemCase;
}

const sweepFields = fc.record(
  {
    problem: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...shippedIds) },
      { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('../problems/mmc.yaml', '/etc/passwd', 'MMC', '__proto__', 'constructor')) },
      { weight: 1, arbitrary: hostileValue },
    ),
    grid: mostly(fc.array(gridAxis, { maxLength: 2 }).map(objectOf)),
    cases: mostly(fc.oneof(fc.constant('all'), fc.subarray([...BUILTIN_CASE_NAMES], { minLength: 1 })), fc.array(fc.oneof(fc.constantFrom(...SOME_CASES), string), { maxLength: 3 })),
    seeds: mostly(fc.oneof(fc.integer({ min: 1, max: 64 }), fc.constant('auto')), number),
    maxSeeds: mostly(fc.integer({ min: 1, max: 4096 }), number),
    seed: mostly(fc.nat({ max: 0xffffffff }), number),
    confidence: mostly(fc.double({ min: 0.5, max: 1, noNaN: true }), number),
    engine: mostly(fc.constantFrom('auto', 'cpu', 'gpu'), string),
    id: mostly(fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/), string),
    title: string,
  },
  { requiredKeys: ['problem', 'grid'] },
);

const sweepCase: fc.Arbitrary<SweepCase> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record(
      {
        sweep: fc.tuple(sweepFields, fc.array(fc.tuple(KEY, hostileValue), { maxLength: 1 })).map(([s, extra]) => objectOf([...Object.entries(s), ...extra])),
        inline: problemCase,
      },
      { requiredKeys: ['sweep'] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ sweep: hostileValue }) },
);

function buildSweep(c: SweepCase): unknown {
  if (c.inline === undefined || typeof c.sweep !== 'object' || c.sweep === null) return c.sweep;
  return objectOf([...Object.entries(c.sweep), ['problem', buildProblem(c.inline)]]);
}

// ---------------------------------------------------------------------------------------------
// Cost expressions

const costToken = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...settablePaths()) },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_KEYS, 'constructor.prototype', '__proto__.polluted', 'gpu.slots[0]', 'a[99999999999999999999]', 'NaN', 'Infinity') },
  { weight: 3, arbitrary: fc.oneof(number.map(numberText), fc.constantFrom('1e309', '1e-400', '.5', '007', '5.', '1e', '9'.repeat(400))) },
  { weight: 6, arbitrary: fc.constantFrom('+', '-', '*', '/', '(', ')', '**', '%', '^', ',', '=') },
  { weight: 1, arbitrary: fc.string({ maxLength: 3 }) },
);

/** Nesting (parentheses, unary minus), a long flat chain, a long run of tokens: deep or large. */
const deepCost = fc
  .tuple(
    fc.constantFrom(10, 100, 400, 1000, 10_000),
    fc.constantFrom((d: number) => nested(d, '(', 'gpu.slots', ')'), (d: number) => `${'-'.repeat(d)}1`, (d: number) => `${'gpu.slots + '.repeat(d)}1`, (d: number) => '1 '.repeat(d)),
  )
  .map(([d, make]) => make(d));

const costText: fc.Arbitrary<string> = fc.oneof(
  { weight: 40, arbitrary: fc.array(fc.tuple(costToken, fc.constantFrom('', ' ', '\t', '\n')), { maxLength: 12 }).map((ts) => ts.map(([t, s]) => t + s).join('')) },
  { weight: 4, arbitrary: deepCost },
  // a hundred thousand of them: rare, as each takes the tokenizer a while
  { weight: 1, arbitrary: fc.constantFrom(nested(100_000, '(', '1', ')'), `${'1 + '.repeat(100_000)}1`) },
);

// ---------------------------------------------------------------------------------------------
// Checks

/**
 * What keeps a ServesimError from naming the field at fault, or undefined when it names it:
 * every entry of its `issues` needs a non-empty path (a dotted field path, or `line L, column
 * C` for YAML syntax) and a message; an error without `issues` needs a non-empty `path`.
 */
function unnamed(err: ServesimError): string | undefined {
  const issues = (err as { issues?: unknown }).issues;
  if (issues === undefined) return typeof err.path === 'string' && err.path !== '' ? undefined : `no path and no issues`;
  if (!Array.isArray(issues) || issues.length === 0) return `issues ${show(issues)}`;
  const bad = (issues as { path?: unknown; message?: unknown }[]).find(
    (i) => typeof i.path !== 'string' || i.path === '' || typeof i.message !== 'string' || i.message === '',
  );
  return bad === undefined ? undefined : `the issue ${show(bad)}`;
}

/** Numbers of the typed Problem that may be fractional; every other one is a u32 word. */
const REAL_FIELDS = new Set(['rate', 'weight', 'share', 'success', 'confidence', 'boundedLoad', 'alpha', 'prefillRate', 'factor', 'scale', 'rateScale', 'pricePerHour',
  // the KV offload tier's bytes a second (compile.ts turns it with bytesPerToken into a token's load time)
  'bandwidth',
  // a profile's roofline floor (GpuProfile.roofline): what the engines' words were raised to, not words
  'weightsUs', 'kvUsPerToken', 'prefillNsPerToken']);
/** Reals the engines keep as thousandths in a u32 word. */
const MILLI_FIELDS = new Set(['boundedLoad', 'alpha', 'factor']);
/** A GPU profile's microseconds, which the engines hold to the nanosecond (layout.ts P): whole nanoseconds, at most LIMITS.stepMicros. */
const NANO_FIELDS = new Set(['base', 'perSeq', 'queueing', 'queueingPerToken', 'perOutputToken']);

/** Traces found sound: parsed once per file, the same object comes back input after input. */
const soundTraces = new WeakSet<Trace>();

/** What src/model/trace.ts promises of a Trace, checked column by column; undefined when it holds. */
function traceFault(t: Trace): string | undefined {
  if (soundTraces.has(t)) return undefined;
  const n = t.requests;
  const columns = [t.at, t.input, t.output, t.node, t.reusable];
  if (n < 1 || columns.some((c) => c.length !== n) || t.idsStart.length !== n + 1) {
    return `${n} requests, columns of ${columns.map((c) => c.length).join(', ')}, idsStart of ${t.idsStart.length}`;
  }
  const { nodes, parent, end, tokens, depth } = t.tree;
  if ([parent, end, tokens, depth].some((c) => c.length !== nodes)) return `a tree of ${nodes} nodes, columns of ${[parent, end, tokens, depth].map((c) => c.length).join(', ')}`;
  for (let u = 0; u < nodes; u++) {
    const p = parent[u]!;
    if (p < -1 || p >= u) return `tree node ${u}: parent ${p}`;
    if (end[u]! <= u || end[u]! > nodes || (p >= 0 && end[u]! > end[p]!)) return `tree node ${u}: end ${end[u]}`;
    if (tokens[u]! < 512 || tokens[u]! % 512 !== 0) return `tree node ${u}: tokens ${tokens[u]}`;
    if (depth[u] !== (p < 0 ? 0 : depth[p]!) + tokens[u]!) return `tree node ${u}: depth ${depth[u]}`;
  }
  if (t.idsStart[0] !== 0 || t.idsStart[n] !== t.ids.length) return `idsStart from ${t.idsStart[0]} to ${t.idsStart[n]}, ${t.ids.length} ids`;
  for (let i = 0; i < n; i++) {
    const at = t.at[i]!;
    const input = t.input[i]!;
    if (!Number.isInteger(at) || at < 0 || (i > 0 && at < t.at[i - 1]!)) return `at[${i}] = ${at}`;
    if (input < 1 || t.output[i]! < 1) return `request ${i}: input ${input}, output ${t.output[i]}`;
    const ids = t.idsStart[i + 1]! - t.idsStart[i]!;
    if (ids < 0) return `request ${i}: idsStart ${t.idsStart[i]} to ${t.idsStart[i + 1]}`;
    const node = t.node[i]!;
    const full = 512 * Math.floor(Math.min(ids, input / 512));
    if (node < -1 || node >= nodes || (node < 0 ? 0 : depth[node]!) !== full) return `request ${i}: node ${node}, ${full} tokens of full blocks`;
    if (t.reusable[i]! > input - 1 || t.reusable[i]! > full) return `reusable[${i}] = ${t.reusable[i]}, over ${Math.min(input - 1, full)}`;
  }
  soundTraces.add(t);
  return undefined;
}

/**
 * What problems/README.md and the engines' u32 parameter block promise of a typed Problem.
 * Returns what is wrong, or undefined.
 */
function problemFault(p: Problem): string | undefined {
  const faults: string[] = [];
  const walk = (x: unknown, path: string, key: string): void => {
    if (path === 'traffic.trace' && x !== null) {
      const why = traceFault(x as Trace);
      if (why !== undefined) faults.push(`${path}: ${why}`);
    } else if (typeof x === 'number') {
      if (!Number.isFinite(x) || x < 0) faults.push(`${path} = ${x}`);
      else if (MILLI_FIELDS.has(key) && Math.round(x * 1000) > 0xffffffff) faults.push(`${path} = ${x}: x1000 overflows a u32`);
      else if (NANO_FIELDS.has(key) && path.includes('profile.')) {
        if (x > LIMITS.stepMicros || Math.abs(x * 1000 - Math.round(x * 1000)) > 1e-6) faults.push(`${path} = ${x}: not whole nanoseconds under ${LIMITS.stepMicros} us`);
      } else if (!REAL_FIELDS.has(key) && !(Number.isInteger(x) && x <= 0xffffffff)) faults.push(`${path} = ${x}: not a u32`);
    } else if (Array.isArray(x)) x.forEach((v, i) => walk(v, `${path}[${i}]`, key));
    else if (typeof x === 'object' && x !== null) for (const [k, v] of Object.entries(x)) walk(v, path === '' ? k : `${path}.${k}`, k);
  };
  walk(p, '', '');
  if (typeof p.id !== 'string' || p.id === '' || p.cases.length === 0) faults.push('no id or no cases');
  const { warmup, duration } = p.traffic;
  const timeout = p.app?.timeout ?? p.server?.timeout ?? 0;
  if (warmup + duration + timeout >= LIMITS.horizonMicros) faults.push(`horizon ${warmup + duration + timeout}us`);
  for (const c of p.cases) {
    const peak = p.traffic.rate * c.rateScale * Math.max(1, c.burst?.scale ?? 1);
    if (peak > LIMITS.maxRate) faults.push(`case ${c.name}: ${peak} arrivals/s`);
    for (const w of [c.burst, c.slowdown, ...c.failures]) {
      if (w !== null && !(warmup <= w.from && w.from < w.to && w.to <= warmup + duration)) {
        faults.push(`case ${c.name}: window ${w.from}..${w.to} outside the measured window`);
      }
    }
    for (const f of c.failures) {
      const replicas = f.target === 'tools' ? (p.tools === null ? undefined : 1) : p[f.target]?.replicas;
      if (replicas === undefined || (typeof f.replica === 'number' && f.replica >= replicas)) faults.push(`case ${c.name}: fails ${f.target} replica ${f.replica} of ${replicas ?? 'none'}`);
    }
  }
  return faults.length === 0 ? undefined : faults.join('; ');
}

// ---------------------------------------------------------------------------------------------
// Object.prototype and Array.prototype must come out of every call as they went in

const GUARDED = [Object.prototype, Array.prototype] as const;
const baseline = GUARDED.map((proto) => new Map(Reflect.ownKeys(proto).map((k) => [k, Object.getOwnPropertyDescriptor(proto, k)!])));

/** What a call changed on the prototypes (put back, so the next input starts clean). */
function prototypeChanges(): string[] {
  const changes: string[] = [];
  GUARDED.forEach((proto, i) => {
    const before = baseline[i]!;
    const name = proto === Object.prototype ? 'Object.prototype' : 'Array.prototype';
    for (const [k, was] of before) {
      if (Object.getOwnPropertyDescriptor(proto, k) === undefined) {
        changes.push(`${name}.${String(k)} removed`);
        Object.defineProperty(proto, k, was);
      }
    }
    for (const k of Reflect.ownKeys(proto)) {
      const was = before.get(k);
      const now = Object.getOwnPropertyDescriptor(proto, k)!;
      if (was === undefined) {
        changes.push(`${name}.${String(k)} added`);
        delete (proto as Record<PropertyKey, unknown>)[k];
      } else if (!Object.is(was.value, now.value) || was.get !== now.get || was.set !== now.set) {
        changes.push(`${name}.${String(k)} changed`);
        Object.defineProperty(proto, k, was);
      }
    }
  });
  return changes;
}

// ---------------------------------------------------------------------------------------------
// A watchdog for inputs that never return: a synchronous loop blocks the test's own timers, so
// a second thread watches and kills the test process, after saying which input it was.

const WATCHDOG_MS = 30_000;

class Watchdog {
  private readonly shared = new SharedArrayBuffer(8 + 4096);
  private readonly state = new Int32Array(this.shared, 0, 2);
  private readonly label = new Uint8Array(this.shared, 8);
  private readonly worker: Worker;

  constructor() {
    this.worker = new Worker(
      `const { workerData } = require('node:worker_threads');
       const { writeSync } = require('node:fs');
       const state = new Int32Array(workerData.shared, 0, 2);
       const label = new Uint8Array(workerData.shared, 8);
       let seen = -1, since = Date.now();
       setInterval(() => {
         const seq = Atomics.load(state, 0);
         if (seq !== seen || Atomics.load(state, 1) === 0) { seen = seq; since = Date.now(); return; }
         if (Date.now() - since < workerData.limit) return;
         const text = new TextDecoder().decode(label.slice(0, label.indexOf(0) < 0 ? label.length : label.indexOf(0)));
         writeSync(2, '\\ninput-fuzz: an input ran over ' + workerData.limit + ' ms and never returned: ' + text + '\\n');
         process.kill(process.pid, 'SIGKILL');
       }, 500);`,
      { eval: true, workerData: { shared: this.shared, limit: WATCHDOG_MS } },
    );
    this.worker.unref();
  }

  /** Marks a call as started; `what` names it in the message if it never returns. */
  enter(what: string): void {
    this.label.fill(0);
    new TextEncoder().encodeInto(what.slice(0, 1000), this.label.subarray(0, this.label.length - 1));
    Atomics.add(this.state, 0, 1);
    Atomics.store(this.state, 1, 1);
  }

  leave(): void {
    Atomics.store(this.state, 1, 0);
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

// ---------------------------------------------------------------------------------------------
// The contract every call keeps

/** A hang detector, not a speed test: a legitimate input parses in milliseconds. */
const CALL_CAP_MS = 2000;

export type Outcome = { readonly valid: true } | { readonly valid: false; readonly code: string };

const watchdog = new Watchdog();

export function closeWatchdog(): Promise<void> {
  return watchdog.close();
}

/** fc.stringify, which throws on a list whose own `constructor` is not a constructor. */
function show(x: unknown): string {
  try {
    return fc.stringify(x);
  } catch {
    return '(unprintable)';
  }
}

function preview(x: unknown): string {
  return typeof x === 'string' ? x.slice(0, 1000) : show(x).slice(0, 1000);
}

/**
 * Runs one input through an entry point; throws unless it ends as the contract says. `fault`
 * says what is wrong with a returned value, if anything; `generated` (the input as generated,
 * shorter than the input built from it) names the input if it never returns.
 */
function contract<T>(entry: string, generated: unknown, call: () => T, fault: (result: T) => string | undefined): Outcome {
  watchdog.enter(`${entry}: ${preview(generated)}`);
  const start = performance.now();
  let result: { value: T } | { error: unknown };
  try {
    result = { value: call() };
  } catch (error) {
    result = { error };
  }
  const ms = performance.now() - start;
  watchdog.leave();
  const changed = prototypeChanges();
  if (changed.length > 0) throw new Error(`${entry}: prototypes changed: ${changed.join(', ')}`);
  if (ms > CALL_CAP_MS) throw new Error(`${entry}: took ${Math.round(ms)} ms (cap ${CALL_CAP_MS} ms)`);
  if ('error' in result) {
    const e = result.error;
    if (!(e instanceof ServesimError)) throw new Error(`${entry}: threw ${e instanceof Error ? e.stack : String(e)}`);
    const why = unnamed(e);
    if (why !== undefined) throw new Error(`${entry}: ${e.code} names no field (${why}): ${e.message}`);
    return { valid: false, code: e.code };
  }
  const wrong = fault(result.value);
  if (wrong !== undefined) throw new Error(`${entry}: accepted an invalid input: ${wrong}`);
  return { valid: true };
}

/** The input of a call must come out as it went in (overrides work on a copy). */
function unchanged(raw: unknown, call: () => Outcome): Outcome {
  const before = show(raw);
  const out = call();
  if (show(raw) !== before) throw new Error(`the input was changed: ${before.slice(0, 300)}`);
  return out;
}

function sweepFault(s: Sweep): string | undefined {
  const points = s.axes.reduce((n, a) => n * a.values.length, 1);
  if (s.points.length !== points) return `${s.points.length} points for a grid of ${points}`;
  // sweeps/README.md: at most 100,000 grid points, so a huge range must be refused
  if (points > 100_000) return `${points} grid points`;
  if (s.maxSeeds < s.seeds) return `maxSeeds ${s.maxSeeds} under seeds ${s.seeds}`;
  // the limit counts the most seeds an undecided configuration may take
  if (points * s.caseNames.length * s.maxSeeds > DEFAULT_MAX_INSTANCES) return `${points} points x ${s.caseNames.length} cases x ${s.maxSeeds} seeds`;
  return problemFault(s.problem);
}

function costFault(r: { paths: readonly string[]; value: unknown }): string | undefined {
  if (typeof r.value !== 'number') return `evaluates to ${String(r.value)}`;
  const bad = r.paths.find((p) => parsePath(p) === undefined);
  return bad === undefined ? undefined : `reads the path ${JSON.stringify(bad)}`;
}

export interface EntryPoint<T> {
  readonly entry: string;
  readonly arb: fc.Arbitrary<T>;
  readonly run: (input: T) => Outcome;
}

function entryPoint<T>(entry: string, arb: fc.Arbitrary<T>, run: (input: T) => Outcome): EntryPoint<T> {
  return { entry, arb, run };
}

export const ENTRY_POINTS = {
  object: entryPoint('problemFromObject', problemCase, (c) => {
    const raw = buildProblem(c);
    return unchanged(raw, () => contract('problemFromObject', c, () => problemFromObject(raw), problemFault));
  }),
  yaml: entryPoint('parseProblem', yamlCase, (c) => {
    const text = yamlText(c);
    return contract('parseProblem', c, () => parseProblem(text, 'fuzz.yaml', c.sets), problemFault);
  }),
  set: entryPoint('--set', fc.record({ base: fc.constantFrom(...shippedIds), sets: fc.array(setText, { minLength: 1, maxLength: 3 }) }), ({ base, sets }) => {
    const raw = SHIPPED.find((s) => s.id === base)!.raw;
    return unchanged(raw, () => contract('--set', { base, sets }, () => problemFromObject(raw, sets), problemFault));
  }),
  sweep: entryPoint('sweepFromObject', sweepCase, (c) => {
    const raw = buildSweep(c);
    return contract('sweepFromObject', c, () => sweepFromObject(raw), sweepFault);
  }),
  cost: entryPoint('parseCost', costText, (text) =>
    contract(
      'parseCost',
      text,
      () => {
        const cost = parseCost(text);
        // the hint search evaluates every cost it parses
        return { paths: cost.paths, value: cost.evaluate(() => 1) };
      },
      costFault,
    ),
  ),
} as const;
