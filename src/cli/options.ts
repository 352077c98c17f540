/**
 * Argument parsing shared by the commands (`run`, and later `sweep`, `serve`, `hint`): each
 * parser throws commander's InvalidArgumentError with a message naming the option, so a bad
 * value reads `error: option '--seeds <n>' argument '0' is invalid. --seeds must be ...`.
 */
import { InvalidArgumentError, Option } from 'commander';
import { ServesimError } from '../errors.js';
import type { EngineChoice } from '../run/types.js';
import { MAX_SEEDS } from '../sweep/spec.js';
import { DEFAULT_MAX_SEEDS, seedRange, type SeedRange } from '../model/verdict.js';

/** How a command writes its results on stdout. */
export type OutputFormat = 'table' | 'json' | 'csv';

export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'json', 'csv'];
export const ENGINE_CHOICES: readonly EngineChoice[] = ['auto', 'gpu', 'cpu'];

/** Seeds per case when none are asked for. */
export const DEFAULT_SEEDS = 64;
/** Seeds are u32 keys of the counter-based generator (docs/model.md section 7). */
export const MAX_SEED = 0xffffffff;

/** Exit statuses of the CLI. */
export const EXIT = {
  ok: 0,
  /** An unexpected error (a bug): the stack is printed. */
  internal: 1,
  /** A usage or input error: bad option, invalid problem, unknown case. */
  usage: 2,
  /** `run --check`: a case failed (1, as a test runner's failure) or is undecided (3). */
  checkFailed: 1,
  checkUndecided: 3,
  /** Ctrl-C, as shells report a SIGINT death. */
  cancelled: 130,
} as const;

/** An integer in [min, max] written in plain decimal, or an error naming `option`. */
export function parseInteger(text: string, option: string, min: number, max: number): number {
  const trimmed = text.trim();
  // Number() would take '', '0x10', '1e3' and ' 1 '; a count on a command line is digits
  if (!/^[+-]?\d+$/.test(trimmed)) {
    throw new InvalidArgumentError(`${option} must be an integer, got '${text}'.`);
  }
  const value = Number(trimmed);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw new InvalidArgumentError(`${option} must be an integer ${range}, got '${text}'.`);
  }
  return value;
}

/**
 * `--seeds N|auto`: a positive integer, at most the seeds a case may hold in memory
 * (MAX_SEEDS), or `auto`: seeds until each verdict is decided (src/model/verdict.ts).
 */
export function parseSeeds(text: string): number | 'auto' {
  if (text.trim() === 'auto') return 'auto';
  return parseInteger(text, '--seeds', 1, MAX_SEEDS);
}

/** `--max-seeds N`: the most seeds an undecided configuration takes. */
export function parseMaxSeeds(text: string): number {
  return parseInteger(text, '--max-seeds', 1, MAX_SEEDS);
}

/**
 * `--seeds` and `--max-seeds` as the seeds every configuration runs and the most an undecided
 * one takes; an error naming `--max-seeds` when it is below `--seeds`.
 */
export function seedOptions(seeds: number | 'auto', maxSeeds: number | undefined): SeedRange {
  const range = seedRange(seeds, maxSeeds);
  if (typeof range === 'string') throw new ServesimError('SERVESIM_SEEDS_INVALID', `${maxSeeds} must be at least --seeds (${seeds})`, '--max-seeds');
  return range;
}

/** `--seed BASE`: the first seed, a u32. */
export function parseSeedBase(text: string): number {
  return parseInteger(text, '--seed', 0, MAX_SEED);
}

/** `--engine`: one of {@link ENGINE_CHOICES}. */
export function parseEngine(text: string): EngineChoice {
  return parseChoice(text, '--engine', ENGINE_CHOICES);
}

/** One of `choices`, or an error naming the option and listing them. */
export function parseChoice<T extends string>(
  text: string,
  option: string,
  choices: readonly T[],
): T {
  const found = choices.find((c) => c === text);
  if (found === undefined) {
    throw new InvalidArgumentError(
      `${option} must be one of ${choices.join(', ')}, got '${text}'.`,
    );
  }
  return found;
}

/**
 * `--case NAME` (repeatable, or a comma list): accumulates names; `all` anywhere means every
 * case. Commander calls it once per occurrence with the previous value.
 */
export function collectCases(
  text: string,
  previous: readonly string[] | 'all' = [],
): readonly string[] | 'all' {
  const names = text.split(',').map((n) => n.trim()).filter((n) => n !== '');
  if (names.length === 0) throw new InvalidArgumentError(`--case needs a case name, got '${text}'.`);
  if (previous === 'all' || names.includes('all')) return 'all';
  return [...previous, ...names.filter((n) => !previous.includes(n))];
}

/**
 * `--set PATH=VALUE` (repeatable): keeps the raw overrides in order for the problem parser,
 * which checks the path and the value; only the shape is checked here.
 */
export function collectSet(text: string, previous: readonly string[] = []): readonly string[] {
  const eq = text.indexOf('=');
  if (eq <= 0 || text.slice(0, eq).trim() === '') {
    throw new InvalidArgumentError(`--set must be PATH=VALUE (e.g. gpu.slots=32), got '${text}'.`);
  }
  return [...previous, text];
}

/** The options `run`, `sweep` and `hint` share, as commander Options to add to a command. */
export function simulationOptions(): Option[] {
  return [
    new Option('-c, --case <names>', 'case to run, repeatable or a comma list; "all" for every case')
      .argParser(collectCases),
    new Option('-n, --seeds <n>', "independent seeds (instances) per case, or 'auto': until each verdict is decided")
      .argParser(parseSeeds)
      .default(DEFAULT_SEEDS),
    maxSeedsOption(),
    new Option('--seed <base>', "first seed (default: the problem's seed)").argParser(parseSeedBase),
    new Option('-s, --set <path=value>', 'override a problem field, repeatable (gpu.slots=32)')
      .argParser(collectSet),
    new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')}`)
      .argParser(parseEngine)
      .default('auto'),
  ];
}

/** `--max-seeds`, for the commands that take `--seeds`. */
export function maxSeedsOption(): Option {
  return new Option('--max-seeds <n>', `most seeds an undecided configuration takes (default: ${DEFAULT_MAX_SEEDS.toLocaleString('en')} with --seeds auto, else --seeds)`).argParser(parseMaxSeeds);
}

/** `-f, --format`, for any command that prints results: these formats, table by default. */
export function formatOption(formats: readonly OutputFormat[] = OUTPUT_FORMATS): Option {
  return new Option('-f, --format <format>', `output format: ${formats.join(', ')}`)
    .argParser((t) => parseChoice(t, '--format', formats))
    .default('table');
}

/** The parsed values of {@link simulationOptions} and {@link formatOption}. */
export interface SimulationOptionValues {
  readonly case?: readonly string[] | 'all';
  readonly seeds: number | 'auto';
  readonly maxSeeds?: number;
  readonly seed?: number;
  readonly set?: readonly string[];
  readonly engine: EngineChoice;
  readonly format: OutputFormat;
}

/**
 * Resolves on Ctrl-C or SIGTERM, for the long-running commands (serve, worker); the returned
 * function stops listening. main's Ctrl-C handler stays on meanwhile, so a second Ctrl-C
 * exits without waiting for the drain.
 */
export async function untilStopped(io: { onInterrupt(handler: () => void): () => void }): Promise<() => void> {
  let release = (): void => {};
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      resolve();
    };
    release = io.onInterrupt(stop);
    process.once('SIGTERM', stop);
  });
  return release;
}
