/** The PROBLEM argument of `run` and `hint`: a shipped problem's id or a file. */
import { resolve } from 'node:path';
import { ServesimError } from '../errors.js';
import { isShippedId, shippedProblemsDir } from '../sweep/spec.js';

/**
 * `read` applied to a problem argument of `hint` or `run`: a shipped problem's id (`mmc`, as GET
 * /v1/problems lists them) reads problems/ID.yaml wherever servesim is installed, anything
 * else is a file path. An id that names no shipped problem says so.
 */
export function readProblemArgument<T>(problem: string, read: (path: string) => T): T {
  const shipped = isShippedId(problem);
  try {
    return read(shipped ? resolve(shippedProblemsDir(), `${problem}.yaml`) : problem);
  } catch (err) {
    if (shipped && err instanceof ServesimError && err.code === 'SERVESIM_FILE_UNREADABLE') {
      throw new ServesimError('SERVESIM_FILE_UNREADABLE', `no shipped problem "${problem}"`);
    }
    throw err;
  }
}
