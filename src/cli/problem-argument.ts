/** The PROBLEM argument of `run`, `hint` and `sweep --vary`: a shipped problem's id or a file. */
import { dirname, resolve } from 'node:path';
import { invalidProblem } from '../errors.js';
import { applyOverrides, overrideFor } from '../problem/overrides.js';
import { problemFromObject, readInputFile, readYaml } from '../problem/parse.js';
import { isPlainObject } from '../problem/schema-walk.js';
import { problemSource, resolveProblemSource } from '../problem/source.js';
import { TRACE_FIELD } from '../problem/trace.js';

/**
 * `read` applied to the file a problem argument of `hint` or `run` names (problem/source.ts): a
 * shipped problem's id (`mmc`, as GET /v1/problems lists them) reads problems/ID.yaml wherever
 * servesim is installed, anything else is a file path, relative to the working directory. An
 * id that names no shipped problem says so.
 */
export function readProblemArgument<T>(problem: string, read: (path: string) => T): T {
  return read(resolveProblemSource(problemSource(problem), '.').file);
}

/**
 * The problem argument as an inline object with `--set` applied (checked with --set's own
 * messages), for a search or a grid to vary. Its trace's path is made absolute, as the file and
 * --set resolve it, for the object has no folder.
 */
export function problemWithOverrides(problem: string, sets: readonly string[]): Record<string, unknown> {
  let folder = '';
  const text = readProblemArgument(problem, (file) => {
    folder = dirname(resolve(file));
    return readInputFile(file, 'problem file', problem);
  });
  const { value } = readYaml(text, problem, (issues) => invalidProblem(issues, problem));
  const dirs = { file: folder, set: process.cwd() };
  problemFromObject(value, sets, problem, dirs);
  const applied = applyOverrides(value, sets) as Record<string, unknown>;
  const traffic = applied['traffic'];
  if (isPlainObject(traffic) && typeof traffic['trace'] === 'string') {
    const from = overrideFor(TRACE_FIELD, sets) === undefined ? dirs.file : dirs.set;
    return { ...applied, traffic: { ...traffic, trace: resolve(from, traffic['trace']) } };
  }
  return applied;
}
