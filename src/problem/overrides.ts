/**
 * `--set PATH=VALUE` overrides, applied to the raw problem before validation so that a value
 * set on the command line is checked exactly like one written in the file. Paths are checked
 * against the schema, not the file, so a field the file leaves to its default can be set too.
 */
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { invalidOverrides, type FieldIssue } from '../errors.js';
import { INPUT_LIMITS, shapeExcess } from './bounds.js';
import { describeFields, unknownFieldMessage } from './issues.js';
import { builtinProfile } from './profiles.js';
import {
  childOf,
  discriminatorOf,
  formatPath,
  isPlainObject,
  nodeOf,
  parsePath,
  rawChild,
  recordKeyProblem,
  unwrap,
  type PathSegment,
  type SchemaNode,
} from './schema-walk.js';
import { COMPONENTS, problemFileSchema } from './schema.js';
import { formatDuration } from './units.js';

/** One parsed `--set`: where, what, and the text it came from (for messages). */
export interface Override {
  readonly path: readonly PathSegment[];
  readonly value: unknown;
  readonly text: string;
}

/**
 * An override as `--set` text, or parsed already: a sweep's grid points share their axes'
 * parsed paths and typed values rather than each parsing its text again.
 */
export type OverrideInput = string | Override;

class OverrideError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** Parses `gpu.slots=8`: the path dotted, the value a YAML scalar (or flow collection). */
export function parseOverride(text: string): Override {
  const eq = text.indexOf('=');
  // an empty --set has no path to name: name the option, as '(problem)' names a whole file
  if (eq < 0) throw new OverrideError(text.trim() === '' ? '(--set)' : text, 'expected PATH=VALUE, e.g. gpu.slots=8');
  const pathText = text.slice(0, eq).trim();
  const valueText = text.slice(eq + 1).trim();
  if (pathText === '') throw new OverrideError(text, 'the path before = is empty; expected PATH=VALUE, e.g. gpu.slots=8');
  const path = parsePath(pathText);
  if (path === undefined) {
    throw new OverrideError(pathText, 'not a field path; use dotted names with [n] for list entries, e.g. workload.prefixes[0].tokens');
  }
  if (valueText === '') throw new OverrideError(pathText, 'no value after =');
  const notYaml = (why: string): OverrideError =>
    new OverrideError(pathText, `the value ${JSON.stringify(valueText)} is not valid YAML: ${why.split('\n')[0]}`);
  // a warning (a tag it cannot resolve, such as !!js/function) would silently make a string
  const doc = parseDocument(valueText, { logLevel: 'error' });
  const bad = doc.errors[0] ?? doc.warnings[0];
  if (bad !== undefined) throw notYaml(bad.message);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: INPUT_LIMITS.aliases });
  } catch (e) {
    throw notYaml((e as Error).message);
  }
  // a value is held to a file's bounds before it is checked (its text is bounded by the command line)
  const excess = shapeExcess(value);
  if (excess !== undefined) throw new OverrideError(pathText, excess);
  return { path, value, text };
}

/** A built-in profile as an inline one, so a single field of it can be changed. */
function inlineProfile(raw: unknown, at: string): Record<string, unknown> {
  const name = raw === undefined ? '8b-h100' : raw;
  const p = typeof name === 'string' ? builtinProfile(name) : undefined;
  if (p === undefined) throw new OverrideError(at, `unknown profile ${JSON.stringify(name)}; set the whole profile instead`);
  return {
    name: `${p.name} (modified)`,
    base: formatDuration(p.base),
    perSeq: formatDuration(p.perSeq),
    prefillRate: p.prefillRate,
    chunk: p.chunk,
  };
}

/** The problem's kind and components, for "the problem has no tools". */
function lacks(root: Record<string, unknown>, component: string): string {
  const w = root['workload'];
  const kind = isPlainObject(w) && typeof w['kind'] === 'string' ? w['kind'] : undefined;
  const id = typeof root['id'] === 'string' ? root['id'] : 'the problem';
  const has = COMPONENTS.filter((c) => root[c] !== undefined);
  const what = kind === undefined ? '' : ` (${id} is a ${kind} workload with ${has.join(', ')})`;
  return `the problem has no ${component}${what}`;
}

/** Why `node` has no field `seg`, for the override that asked for it. */
function noField(node: SchemaNode, seg: PathSegment, here: readonly PathSegment[], container: unknown): string {
  switch (node.kind) {
    case 'object':
      return unknownFieldMessage(String(seg), node.keys, describeFields(here, node.keys, container));
    case 'record':
      return typeof seg === 'string'
        ? `${JSON.stringify(seg)} is not a valid name: ${recordKeyProblem(node, seg)}`
        : `${formatPath(here)} is a mapping: use .name`;
    case 'array':
      return `${formatPath(here)} is a list: use [n]`;
    case 'leaf':
      return `${formatPath(here)} is a single value; it has no field ${String(seg)}`;
  }
}

/** The decode replicas' own profile, a field of its own below the path a profile's fields are set through as gpu.profile's are. */
const DECODE_PROFILE = 'gpu.disaggregation.decode.profile';

function applyOne(root: Record<string, unknown>, o: Override): void {
  let schema: z.ZodType = problemFileSchema;
  let container: unknown = root;
  for (let i = 0; i < o.path.length; i++) {
    const seg = o.path[i] as PathSegment;
    const here = o.path.slice(0, i);
    const at = formatPath(o.path.slice(0, i + 1));
    const last = i === o.path.length - 1;
    const node = nodeOf(schema, container);
    const child = childOf(node, seg);
    if (child === undefined) throw new OverrideError(at, noField(node, seg, here, container));
    if (i === 0 && (COMPONENTS as readonly string[]).includes(String(seg)) && root[seg] === undefined && !last) {
      throw new OverrideError(formatPath(o.path), lacks(root, String(seg)));
    }
    if (node.kind === 'array') {
      const len = Array.isArray(container) ? container.length : 0;
      if ((seg as number) >= len) {
        throw new OverrideError(at, `${formatPath(here)} has ${len} entr${len === 1 ? 'y' : 'ies'}; set the whole list to add one`);
      }
    }

    const box = container as Record<PathSegment, unknown>;
    if (last) {
      // an override is applied to many problems (a grid's): a later override must not change its value
      box[seg] = typeof o.value === 'object' && o.value !== null ? structuredClone(o.value) : o.value;
      return;
    }
    let next = rawChild(container, seg);
    const shape = unwrap(child);
    const isProfile = at === 'gpu.profile' || at === DECODE_PROFILE;
    if (isProfile && !isPlainObject(next)) {
      // the decode replicas' profile is gpu's until set
      const from = next === undefined && at === DECODE_PROFILE ? rawChild(root['gpu'], 'profile') : next;
      next = isPlainObject(from) ? structuredClone(from) : inlineProfile(from, at);
    } else if (next === undefined) {
      if (shape instanceof z.ZodObject || shape instanceof z.ZodRecord) next = {};
      else if (shape instanceof z.ZodArray) next = [];
      else if (shape instanceof z.ZodUnion && discriminatorOf(shape) === undefined) {
        throw new OverrideError(at, `is not written in the file; set the whole ${at}, e.g. ${at}='{dist: lognormal, median: 250ms, p99: 1s}'`);
      } else next = {};
    } else if (!isPlainObject(next) && !Array.isArray(next)) {
      const nextSeg = String(o.path[i + 1]);
      const composite =
        shape instanceof z.ZodObject || shape instanceof z.ZodRecord || shape instanceof z.ZodArray || shape instanceof z.ZodUnion;
      throw new OverrideError(
        formatPath(o.path),
        composite
          ? `${at} is written as a single value (${JSON.stringify(next)}); set the whole ${at} instead`
          : `${at} is a single value; it has no field ${nextSeg}`,
      );
    }
    box[seg] = next;
    schema = child;
    container = next;
  }
}

/**
 * The raw problem with every override applied in order (the input is not changed). Throws
 * SERVESIM_OVERRIDE_INVALID listing every bad override.
 */
export function applyOverrides(raw: unknown, overrides: readonly OverrideInput[]): unknown {
  if (overrides.length === 0) return raw;
  const root: Record<string, unknown> = isPlainObject(raw) ? structuredClone(raw) : {};
  const issues: FieldIssue[] = [];
  for (const o of overrides) {
    try {
      applyOne(root, typeof o === 'string' ? parseOverride(o) : o);
    } catch (e) {
      if (!(e instanceof OverrideError)) throw e;
      issues.push({ path: e.path, message: e.message });
    }
  }
  if (issues.length > 0) throw invalidOverrides(issues);
  return root;
}

/**
 * Every path `--set` takes, in schema order: fields, whole lists and mappings, and the fields
 * of an inline GPU profile. Workload fields of every kind are listed.
 */
export function settablePaths(): string[] {
  const out: string[] = [];
  const walk = (schema: z.ZodType, path: readonly PathSegment[]): void => {
    const s = unwrap(schema);
    if (s instanceof z.ZodUnion && discriminatorOf(s) === undefined) {
      out.push(formatPath(path));
      for (const opt of s.options as readonly z.ZodType[]) {
        if (unwrap(opt) instanceof z.ZodObject) walk(opt, path);
      }
      return;
    }
    const node = nodeOf(s, undefined);
    if (node.kind !== 'object') {
      out.push(formatPath(path));
      return;
    }
    for (const key of node.keys) {
      // $schema names the file's schema for editors: not a problem field
      if (key.startsWith('$')) continue;
      const childPath = [...path, key];
      if (!out.includes(formatPath(childPath))) walk(node.child(key), childPath);
    }
  };
  walk(problemFileSchema, []);
  return out.filter((p, i, all) => all.indexOf(p) === i);
}

/** The path an override sets; undefined for text without one. */
function pathOf(o: OverrideInput): readonly PathSegment[] | undefined {
  if (typeof o !== 'string') return o.path;
  const eq = o.indexOf('=');
  return eq < 0 ? undefined : parsePath(o.slice(0, eq).trim());
}

/** The `--set` text of the override whose path covers a field path (itself or an ancestor), for messages. */
export function overrideFor(fieldPath: string, overrides: readonly OverrideInput[]): string | undefined {
  let found: string | undefined;
  for (const o of overrides) {
    const path = pathOf(o);
    if (path === undefined) continue;
    const p = formatPath(path);
    if (fieldPath === p || fieldPath.startsWith(`${p}.`) || fieldPath.startsWith(`${p}[`)) found = typeof o === 'string' ? o : o.text;
  }
  return found;
}
