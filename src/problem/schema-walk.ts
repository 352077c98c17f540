/**
 * Walking the problem schema by field path, so that `--set` paths, unknown-key messages and the
 * list of settable paths all come from the one schema and cannot drift from it. Where the
 * schema branches (workload kinds, a distribution given as a value or as {dist: ...}), the raw
 * value at that spot picks the branch.
 */
import { z } from 'zod';

export type PathSegment = string | number;

/** What a field holds, as far as paths go. */
export type SchemaNode =
  | { readonly kind: 'object'; readonly keys: readonly string[]; child(key: string): z.ZodType }
  | { readonly kind: 'record'; readonly value: z.ZodType }
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
  if (s instanceof z.ZodRecord) return { kind: 'record', value: s.valueType as z.ZodType };
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
      child: (k) => shapes.find((sh) => k in sh)?.[k] as z.ZodType,
    };
  }
  return { kind: 'leaf' };
}

function rawChild(raw: unknown, seg: PathSegment): unknown {
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
    const node = nodeOf(schema, raw);
    let next: z.ZodType | undefined;
    if (node.kind === 'object' && typeof seg === 'string' && node.keys.includes(seg)) next = node.child(seg);
    else if (node.kind === 'record' && typeof seg === 'string') next = node.value;
    else if (node.kind === 'array' && typeof seg === 'number') next = node.element;
    if (next === undefined) return undefined;
    schema = next;
    raw = rawChild(raw, seg);
  }
  return { schema, raw };
}

/** Dotted path with list indexes in brackets: `workload.prefixes[0].tokens`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** Splits `workload.prefixes[0].tokens` into segments; undefined when malformed. */
export function parsePath(text: string): PathSegment[] | undefined {
  if (text === '') return undefined;
  const out: PathSegment[] = [];
  for (const part of text.split('.')) {
    const m = /^([A-Za-z0-9_-]+)((?:\[[0-9]+\])*)$/.exec(part);
    if (m === null) return undefined;
    out.push(m[1] as string);
    for (const idx of (m[2] ?? '').matchAll(/\[([0-9]+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}
