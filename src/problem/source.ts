/**
 * Where a problem comes from, answered here for the CLI, sweep files and the service alike: a
 * shipped problem's id (`mmc`, as GET /v1/problems lists them: problems/mmc.yaml wherever
 * servesim is installed), a file path, or the problem itself. A file taken from problems/ (a
 * shipped problem, the trace an inline problem names) is read at its real path, which must
 * be inside problems/ too: a symlink there cannot reach out of it.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ServesimError } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** A problem named by a shipped problem's id or a file path. */
export type NamedSource = { readonly kind: 'id'; readonly id: string } | { readonly kind: 'file'; readonly path: string };

export type ProblemSource = NamedSource | { readonly kind: 'inline'; readonly problem: Readonly<Record<string, unknown>> };

/** The file a named problem is read from, and how messages name it (never by a server's absolute path). */
export interface ProblemFile {
  readonly file: string;
  readonly shown: string;
}

export interface InlineProblem {
  readonly inline: Readonly<Record<string, unknown>>;
  readonly shown: string;
}

/** How a shipped problem's id is written: its file's name without `.yaml`. */
const ID = /^[a-z0-9][a-z0-9-]*$/;

/** What a `problem` names: a string written as an id (`mmc`) is one, any other a file path; an object is the problem. */
export function problemSource(problem: string): NamedSource;
export function problemSource(problem: string | Readonly<Record<string, unknown>>): ProblemSource;
export function problemSource(problem: string | Readonly<Record<string, unknown>>): ProblemSource {
  if (typeof problem !== 'string') return { kind: 'inline', problem };
  return ID.test(problem) ? { kind: 'id', id: problem } : { kind: 'file', path: problem };
}

/** servesim's problems/ folder, next to its package.json. */
export function shippedProblemsDir(): string {
  const root = packageRoot();
  if (root === null) throw new ServesimError('SERVESIM_FILE_UNREADABLE', "servesim's package.json is not found: the shipped problems and traces live next to it, in problems/");
  return join(root.dir, 'problems');
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** Whether `path` is inside the folder `root` (not the folder itself). */
function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/**
 * The file at `rel` inside `dir` (by default servesim's problems/), at its real path; undefined
 * when the path, or a symlink on its way, leads outside `dir`. A path that does not resolve (no
 * such file) is returned as it is, inside `dir`, for its reader to say what is wrong.
 */
export function fileInProblems(rel: string, dir: string = shippedProblemsDir()): string | undefined {
  const root = realPath(dir) ?? resolve(dir);
  const path = resolve(root, rel);
  if (!within(root, path)) return undefined;
  const real = realPath(path);
  if (real === undefined) return path;
  return within(root, real) ? real : undefined;
}

/** The shipped problems' ids, sorted: each `ID.yaml` in `dir` that is inside it at its real path. */
export function shippedProblemIds(dir: string = shippedProblemsDir()): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && ID.test(f.slice(0, -'.yaml'.length)) && fileInProblems(f, dir) !== undefined)
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

/** `no shipped problem "x"; known: a, b`. */
export function noShippedProblem(id: string, known: readonly string[]): string {
  return `no shipped problem "${id}"; known: ${known.join(', ')}`;
}

/** The file of the shipped problem `id`, at its real path inside `dir`. */
export function shippedProblemFile(id: string, dir: string = shippedProblemsDir()): string {
  const file = ID.test(id) ? fileInProblems(`${id}.yaml`, dir) : undefined;
  let isFile = false;
  try {
    isFile = file !== undefined && statSync(file).isFile();
  } catch {
    // no such file: no such problem
  }
  if (file === undefined || !isFile) throw new ServesimError('SERVESIM_FILE_UNREADABLE', noShippedProblem(id, shippedProblemIds(dir)));
  return file;
}

/**
 * Resolves a problem source: the file a named one is read from, or the inline problem. A file
 * path is relative to `baseDir` (kept relative when `baseDir` is, `.` for the CLI, so messages
 * name it as written); without `baseDir` only ids and inline problems are taken, as a server
 * reads no file a client names. Throws SERVESIM_FILE_UNREADABLE when an id names no shipped
 * problem or a path is not taken.
 */
export function resolveProblemSource(source: NamedSource, baseDir: string | undefined): ProblemFile;
export function resolveProblemSource(source: ProblemSource, baseDir: string | undefined): ProblemFile | InlineProblem;
export function resolveProblemSource(source: ProblemSource, baseDir: string | undefined): ProblemFile | InlineProblem {
  switch (source.kind) {
    case 'inline':
      return { inline: source.problem, shown: 'inline problem' };
    case 'id':
      return { file: shippedProblemFile(source.id), shown: `${source.id}.yaml` };
    case 'file':
      if (baseDir === undefined) {
        throw new ServesimError('SERVESIM_FILE_UNREADABLE', `"${source.path}" is not a shipped problem id; send the problem inline or name one of GET /v1/problems`);
      }
      return { file: isAbsolute(source.path) ? source.path : join(baseDir, source.path), shown: source.path };
  }
}
