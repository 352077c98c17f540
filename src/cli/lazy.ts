/**
 * What the commands run, imported when a command runs rather than when servesim starts: the
 * command table (program.ts) loads commander and the option parsers only, so `--version`,
 * `--help` and a usage error load neither zod, YAML, fastify, Arrow, the worker pool nor
 * WebGPU. The one place the CLI imports its commands' modules.
 */
import type { ProgramDeps } from './program.js';

/** Whether a command that may start the engines (the worker pool, a GPU device) has been loaded. */
let enginesLoaded = false;

/** `load`, noting that the engines may now run. */
function simulating<T>(load: () => Promise<T>): () => Promise<T> {
  return () => {
    enginesLoaded = true;
    return load();
  };
}

/**
 * `load` for a command that runs its work and exits: a pool of one thread may run on this
 * thread (PoolOptions.here), where a server's (serve, worker) keeps it in a worker.
 */
function oneShot<T>(load: () => Promise<T>): () => Promise<T> {
  return simulating(async () => {
    (await import('../run/batches.js')).poolOnThisThread();
    return load();
  });
}

/** Each command's module (its action and what that needs), imported on first use. */
export const commands = {
  run: oneShot(() => import('./run-command.js')),
  sweep: oneShot(() => import('./sweep-command.js')),
  serve: simulating(() => import('./serve-command.js')),
  worker: simulating(() => import('./worker-command.js')),
  hint: oneShot(() => import('./hint-command.js')),
  capacity: oneShot(() => import('./capacity-command.js')),
  compare: oneShot(() => import('./compare-command.js')),
  report: () => import('./report-command.js'),
  profiles: () => import('./profiles-command.js'),
};

const parser = (): Promise<typeof import('../problem/parse.js')> => import('../problem/parse.js');
const engines = simulating(() => import('../run/run.js'));

/** The real problem parser and runner, for the `servesim` bin; each imported on its first call. */
export const realDeps: ProgramDeps = {
  loadProblem: async (path, overrides) => (await parser()).loadProblem(path, overrides),
  selectCases: async (problem, names) => (await parser()).selectCases(problem, names),
  runProblem: async (problem, options) => (await engines()).runProblem(problem, options),
};

/** Closes the engines a command started; imports nothing when no command could have started them. */
export async function closeEngines(): Promise<void> {
  if (enginesLoaded) await (await engines()).closeEngines();
}
