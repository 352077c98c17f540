/**
 * Turns zod's issues into field issues a person can act on: the dotted path of the field, what
 * it must be, and what it got. Union failures are resolved to the branch the input was aiming
 * at (a mapping aims at {dist: ...}, a scalar at a plain value), so a distribution with a bad
 * median reports the median, not "invalid input".
 */
import type { z } from 'zod';
import type { FieldIssue } from '../errors.js';
import { branch, discriminatorValues, formatPath, isPlainObject, nodeOf, schemaAt } from './schema-walk.js';

type Issue = z.core.$ZodIssue;

/** How a value reads in a message: strings quoted, collections named. */
export function describeValue(x: unknown): string {
  if (typeof x === 'string') return JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x);
  if (Array.isArray(x)) return 'a list';
  if (isPlainObject(x)) return 'a mapping';
  return String(x);
}

function withGot(message: string, input: unknown): string {
  if (input === undefined || /\bgot\b/.test(message)) return message;
  // a message that is itself a list reads better with the value set apart
  const sep = /[;,]/.test(message) ? ';' : ',';
  return `${message}${sep} got ${describeValue(input)}`;
}

/** Issues that only say "this branch wanted another type": the input never aimed at it. */
function isMismatch(issues: readonly Issue[]): boolean {
  return issues.every(
    (i) =>
      i.path.length === 0 &&
      (i.code === 'invalid_type' || (i.code === 'invalid_union' && i.errors.length > 0 && i.errors.every(isMismatch))),
  );
}

/** Edit distance, for "did you mean" on misspelt keys. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j] as number;
      const cost = a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1;
      row[j] = Math.min(cur + 1, (row[j - 1] as number) + 1, prev + cost);
      prev = cur;
    }
  }
  return row[b.length] as number;
}

/**
 * The candidate within a third of the word's length in edits (at least one), the nearest; none
 * when none is. A candidate whose length differs by more than that is never near enough (every
 * extra letter is an edit), so it is skipped unmeasured: a megabyte-long unknown name costs a
 * pass over the candidates' lengths, not megabytes times each candidate.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const allowed = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    if (Math.abs(c.length - word.length) > allowed) continue;
    const d = distance(word, c);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return bestD <= allowed ? best : undefined;
}

/** "gpu takes replicas, slots, ..." for the object at `path`. */
export function describeFields(path: readonly PropertyKey[], keys: readonly string[], raw: unknown): string {
  let what = path.length === 0 ? 'a problem' : formatPath(path);
  const shown = keys.filter((k) => !k.startsWith('$'));
  if (isPlainObject(raw) && typeof raw['kind'] === 'string' && path[path.length - 1] === 'workload') {
    what = `a ${raw['kind']} workload`;
  }
  return `${what} takes ${shown.join(', ')}`;
}

export function unknownFieldMessage(key: string, keys: readonly string[], where: string): string {
  const guess = closest(key, keys);
  return `unknown field${guess === undefined ? '' : ` (did you mean ${guess}?)`}; ${where}`;
}

/**
 * Zod's issues for `raw` checked against `schema`, as field issues in the order found.
 */
export function fieldIssues(issues: readonly Issue[], schema: z.ZodType, raw: unknown): FieldIssue[] {
  const out: FieldIssue[] = [];
  const push = (path: readonly PropertyKey[], message: string): void => {
    out.push({ path: path.length === 0 ? '(problem)' : formatPath(path), message });
  };

  const visit = (issue: Issue, base: readonly PropertyKey[]): void => {
    const path = [...base, ...issue.path];
    switch (issue.code) {
      case 'unrecognized_keys': {
        const at = schemaAt(schema, raw, path as (string | number)[]);
        const node = at === undefined ? undefined : nodeOf(at.schema, at.raw);
        const keys = node?.kind === 'object' ? node.keys : [];
        for (const key of issue.keys) {
          push([...path, key], unknownFieldMessage(key, keys, describeFields(path, keys, at?.raw)));
        }
        return;
      }
      case 'invalid_union': {
        if (issue.errors.length === 0) {
          // a discriminated union whose discriminator names no option; path ends at it
          const unionPath = path.slice(0, -1) as (string | number)[];
          const at = schemaAt(schema, raw, unionPath);
          const options = at === undefined ? [] : discriminatorValues(branch(at.schema, at.raw));
          const given = isPlainObject(issue.input) ? issue.input[String(path[path.length - 1])] : undefined;
          const msg = given === undefined ? `required: one of ${options.join(', ')}` : withGot(`must be one of ${options.join(', ')}`, given);
          push(path, msg);
          return;
        }
        const aimed = issue.errors.find((b) => !isMismatch(b));
        if (aimed !== undefined) {
          for (const inner of aimed) visit(inner, path);
          return;
        }
        push(path, issue.input === undefined ? 'required' : withGot(issue.message, issue.input));
        return;
      }
      case 'invalid_type': {
        if (issue.input === undefined) push(path, 'required');
        else if (issue.expected === 'object') push(path, withGot('must be a mapping of fields', issue.input));
        else if (issue.expected === 'array') push(path, withGot('must be a list', issue.input));
        else push(path, withGot(issue.message, issue.input));
        return;
      }
      case 'invalid_key': {
        const key = path[path.length - 1];
        const why = issue.issues[0]?.message ?? issue.message;
        push(path, `${JSON.stringify(String(key))} is not a valid name: ${why}`);
        return;
      }
      default:
        push(path, withGot(issue.message, issue.input));
    }
  };

  for (const issue of issues) visit(issue, []);
  return out;
}
