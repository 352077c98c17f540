/** The PROBLEM argument of `run` and `hint`: a shipped problem's id or a file. */
import { problemSource, resolveProblemSource } from '../problem/source.js';

/**
 * `read` applied to the file a problem argument of `hint` or `run` names (problem/source.ts): a
 * shipped problem's id (`mmc`, as GET /v1/problems lists them) reads problems/ID.yaml wherever
 * servesim is installed, anything else is a file path, relative to the working directory. An
 * id that names no shipped problem says so.
 */
export function readProblemArgument<T>(problem: string, read: (path: string) => T): T {
  return read(resolveProblemSource(problemSource(problem), '.').file);
}
