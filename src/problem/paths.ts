/**
 * Dotted field paths (`workload.prefixes[0].tokens`), as `--set`, `--vary`, sweep grids and
 * hint costs name them: parsed and shown here, walked through the problem schema in
 * schema-walk.ts. Without zod, so that the CLI's option parsers load nothing heavy.
 */

export type PathSegment = string | number;

/** A field name as parsePath reads it; any other key (empty, spaced, dotted) is quoted where it is shown. */
const NAME_TEXT = '[A-Za-z0-9_-]+';
const NAME = new RegExp(`^${NAME_TEXT}$`);
/** A name and its list indexes: `prefixes[0]`. */
const SEGMENT = new RegExp(`^(${NAME_TEXT})((?:\\[[0-9]+\\])*)$`);

/**
 * Dotted path with list indexes in brackets: `workload.prefixes[0].tokens`. A key that is not
 * a name is shown as a JSON string (`gpu."a b"`, `""`), so no path reads as empty or as another.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const name = NAME.test(String(seg)) ? String(seg) : JSON.stringify(String(seg));
      out += out === '' ? name : `.${name}`;
    }
  }
  return out;
}

/** Splits `workload.prefixes[0].tokens` into segments; undefined when malformed. */
export function parsePath(text: string): PathSegment[] | undefined {
  if (text === '') return undefined;
  const out: PathSegment[] = [];
  for (const part of text.split('.')) {
    const m = SEGMENT.exec(part);
    if (m === null) return undefined;
    out.push(m[1] as string);
    for (const idx of (m[2] ?? '').matchAll(/\[([0-9]+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}
