/**
 * Walking the problem schema by field path, so that `--set` paths, unknown-key messages and the
 * list of settable paths all come from the one schema and cannot drift from it. Where the
 * schema branches (workload kinds, a distribution given as a value or as {dist: ...}), the raw
 * value at that spot picks the branch.
 */
import { z } from 'zod';
import type { PathSegment } from './paths.js';

// the paths themselves have their own module, without zod, for the CLI's option parsers
export { formatPath, parsePath, type PathSegment } from './paths.js';

/** What a field holds, as far as paths go. */
export type SchemaNode =
  | { readonly kind: 'object'; readonly keys: readonly string[]; child(key: string): z.ZodType }
  | { readonly kind: 'record'; readonly key: z.ZodType; readonly value: z.ZodType }
  | { readonly kind: 'array'; readonly element: z.ZodType }
  | { readonly kind: 'leaf' };

/** Strips wrappers that change defaults or conversion but not what the field holds. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  for (;;) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodNullable ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault
    ) {
      s = s.unwrap() as z.ZodType;
    } else if (s instanceof z.ZodPipe) {
      s = s.in as z.ZodType;
    } else {
      return s;
    }
  }
}

export function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function isObjectLike(s: z.ZodType): boolean {
  const u = unwrap(s);
  return u instanceof z.ZodObject || u instanceof z.ZodRecord || u instanceof z.ZodUnion;
}

function literalValues(s: z.ZodType | undefined): readonly unknown[] {
  const u = s === undefined ? undefined : unwrap(s);
  return u instanceof z.ZodLiteral ? [...u.values] : [];
}

/** The discriminator of a discriminated union, or undefined for a plain union. */
export function discriminatorOf(s: z.ZodType): string | undefined {
  return s instanceof z.ZodDiscriminatedUnion ? (s.def.discriminator as string) : undefined;
}

/** The discriminator values of each option of a discriminated union, in order. */
export function discriminatorValues(s: z.ZodType): readonly string[] {
  const disc = discriminatorOf(s);
  if (disc === undefined || !(s instanceof z.ZodUnion)) return [];
  const out: string[] = [];
  for (const opt of s.options as readonly z.ZodType[]) {
    const o = unwrap(opt);
    if (o instanceof z.ZodObject) {
      for (const v of literalValues((o.shape as Record<string, z.ZodType>)[disc])) out.push(String(v));
    }
  }
  return out;
}

/**
 * The schema branch the raw value takes. For a discriminated union whose raw value names no
 * known option, every option stays (returned as the union itself).
 */
export function branch(schema: z.ZodType, raw: unknown): z.ZodType {
  const s = unwrap(schema);
  if (!(s instanceof z.ZodUnion)) return s;
  const options = s.options as readonly z.ZodType[];
  const disc = discriminatorOf(s);
  if (disc !== undefined) {
    if (!isPlainObject(raw)) return s;
    for (const opt of options) {
      const o = unwrap(opt);
      if (o instanceof z.ZodObject && literalValues((o.shape as Record<string, z.ZodType>)[disc]).includes(raw[disc])) {
        return o;
      }
    }
    return s;
  }
  const wantObject = isPlainObject(raw);
  const pick = options.find((o) => isObjectLike(o) === wantObject) ?? options[0];
  return pick === undefined ? s : branch(pick, raw);
}

/** The node at `schema` for the raw value found there. */
export function nodeOf(schema: z.ZodType, raw: unknown): SchemaNode {
  const s = branch(schema, raw);
  if (s instanceof z.ZodObject) {
    const shape = s.shape as Record<string, z.ZodType>;
    return { kind: 'object', keys: Object.keys(shape), child: (k) => shape[k] as z.ZodType };
  }
  if (s instanceof z.ZodRecord) return { kind: 'record', key: s.keyType as z.ZodType, value: s.valueType as z.ZodType };
  if (s instanceof z.ZodArray) return { kind: 'array', element: s.element as z.ZodType };
  if (s instanceof z.ZodUnion && discriminatorOf(s) !== undefined) {
    // raw names no option: offer the union of every option's fields
    const shapes = (s.options as readonly z.ZodType[])
      .map(unwrap)
      .filter((o): o is z.ZodObject => o instanceof z.ZodObject)
      .map((o) => o.shape as Record<string, z.ZodType>);
    const keys = [...new Set(shapes.flatMap((sh) => Object.keys(sh)))];
    return {
      kind: 'object',
      keys,
      child: (k) => shapes.find((sh) => Object.hasOwn(sh, k))?.[k] as z.ZodType,
    };
  }
  return { kind: 'leaf' };
}

/**
 * Why a record refuses `key` as a name (its key schema's message), or undefined when it takes
 * it. Names such as `__proto__` or `constructor` fail here, so a path can never reach a
 * member every object inherits.
 */
export function recordKeyProblem(node: SchemaNode & { kind: 'record' }, key: string): string | undefined {
  const r = node.key.safeParse(key);
  return r.success ? undefined : (r.error.issues[0]?.message ?? 'not a valid name');
}

/**
 * The schema of field `seg` of `node`, or undefined when the schema has no such field: one of
 * an object's own fields, a name a record's key schema takes, an index of a list.
 */
export function childOf(node: SchemaNode, seg: PathSegment): z.ZodType | undefined {
  if (node.kind === 'object') return typeof seg === 'string' && node.keys.includes(seg) ? node.child(seg) : undefined;
  if (node.kind === 'record') return typeof seg === 'string' && recordKeyProblem(node, seg) === undefined ? node.value : undefined;
  if (node.kind === 'array') return typeof seg === 'number' ? node.element : undefined;
  return undefined;
}

/** The raw value at `seg`: own properties only, never an inherited member. */
export function rawChild(raw: unknown, seg: PathSegment): unknown {
  if (typeof seg === 'number') return Array.isArray(raw) ? raw[seg] : undefined;
  return isPlainObject(raw) && Object.hasOwn(raw, seg) ? raw[seg] : undefined;
}

/**
 * The schema of the field at `path`, with the raw value found there, or undefined when the
 * schema has no such field.
 */
export function schemaAt(
  root: z.ZodType,
  rawRoot: unknown,
  path: readonly PathSegment[],
): { schema: z.ZodType; raw: unknown } | undefined {
  let schema = root;
  let raw = rawRoot;
  for (const seg of path) {
    const next = childOf(nodeOf(schema, raw), seg);
    if (next === undefined) return undefined;
    schema = next;
    raw = rawChild(raw, seg);
  }
  return { schema, raw };
}
