/**
 * Bounds on input, checked before the work they bound: a file's size before it is read, a YAML
 * document's nesting and node count while its tokens are read (before the document is built),
 * a JSON body's or a `--set` value's after parsing and before validation. Messages quote them.
 * Their own module, so that parse.ts and overrides.ts (which parse.ts uses) both read them.
 */

export const INPUT_LIMITS = {
  /** Bytes of a problem or sweep file: the shipped problems are under 10 KB; the service takes
   * request bodies of the same size. */
  bytes: 1024 * 1024,
  /** Keys and values (scalars, aliases and collections) in one document: building a YAML
   * document takes about 20 µs a node; the shipped problems have under 300. */
  nodes: 10_000,
  /** Nesting levels: parsing, validation and conversion recurse once a level; problems nest 5. */
  depth: 64,
  /** YAML alias expansions (`*name`): a few nested aliases expand exponentially ("billion laughs"). */
  aliases: 100,
} as const;

export function nodesText(): string {
  return `more than ${INPUT_LIMITS.nodes.toLocaleString('en')} keys and values; the limit is ${INPUT_LIMITS.nodes.toLocaleString('en')}`;
}

export function depthText(): string {
  return `nested deeper than ${INPUT_LIMITS.depth} levels; the limit is ${INPUT_LIMITS.depth}`;
}

/**
 * Where a parsed value (a JSON request body, a `--set` value) passes the node or depth bound, counting each value
 * and each key as YAML text does; undefined within them. Walks with its own stack, so a deep
 * value cannot overflow the call stack, and stops at the first bound passed.
 */
export function shapeExcess(value: unknown): string | undefined {
  const stack: { value: unknown; level: number }[] = [{ value, level: 1 }];
  let nodes = 1;
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    if (item.level > INPUT_LIMITS.depth) return depthText();
    const list = Array.isArray(item.value);
    const children = list ? (item.value as unknown[]) : Object.values(item.value);
    // an object's keys are nodes too, as in YAML
    nodes += list ? children.length : 2 * children.length;
    if (nodes > INPUT_LIMITS.nodes) return nodesText();
    for (const child of children) stack.push({ value: child, level: item.level + 1 });
  }
  return undefined;
}

