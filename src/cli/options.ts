/**
 * Argument parsing for the commands: each parser throws commander's InvalidArgumentError with
 * a message naming the option, so a bad value reads `error: option '--seeds <n>' argument '0'
 * is invalid. --seeds must be ...`. The command table (program.ts) loads this module whenever
 * servesim starts, so it imports nothing heavy: no zod, YAML, fastify or engines.
 */
import { extname } from 'node:path';
import { InvalidArgumentError, Option } from 'commander';
import { ServesimError } from '../errors.js';
import { parseCost } from '../hint/cost.js';
import { DEFAULT_MAX_SEEDS, seedRange, type SeedRange } from '../model/verdict.js';
import { parseQueueUrl } from '../queue/connection.js';
import type { EngineChoice } from '../run/types.js';
import { MAX_SEEDS } from '../sweep/limits.js';
import { MAX_REQUEST_SEEDS } from '../run/limits.js';

/** How a command writes its results on stdout. */
export type OutputFormat = 'table' | 'json' | 'csv';

export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'json', 'csv'];

/** How `run` writes: the output formats, and a `vllm bench serve` result a case (src/run/vllm-bench.ts). */
export type RunFormat = OutputFormat | 'vllm-bench';
export const RUN_FORMATS: readonly RunFormat[] = [...OUTPUT_FORMATS, 'vllm-bench'];

/** How `sweep` writes its results: the output formats, and Arrow and Parquet tables. */
export type SweepFormat = OutputFormat | 'arrow' | 'parquet';
export const SWEEP_FORMATS: readonly SweepFormat[] = [...OUTPUT_FORMATS, 'arrow', 'parquet'];

/** The format `sweep --out FILE` writes, by FILE's extension. */
export const FORMAT_OF_EXTENSION: Readonly<Record<string, SweepFormat>> = {
  '.arrow': 'arrow',
  '.feather': 'arrow',
  '.arrows': 'arrow',
  '.parquet': 'parquet',
  '.csv': 'csv',
  '.json': 'json',
  '.txt': 'table',
};

export const EXTENSIONS = Object.keys(FORMAT_OF_EXTENSION).join(', ');

/** The extensions `--seeds-out FILE` takes: a per-seed table is Arrow or Parquet (FORMAT_OF_EXTENSION). */
export const SEEDS_OUT_EXTENSIONS: readonly string[] = ['.parquet', '.arrow', '.feather', '.arrows'];

/** A table of records' FILE option (`--seeds-out`, `--requests-out`): its extension names the format. */
function recordsOutOption(flag: string, what: string): Option {
  return new Option(`${flag} <file>`, `also write ${what} to this file: ${SEEDS_OUT_EXTENSIONS.join(', ')}`).argParser((text) => {
    if (!SEEDS_OUT_EXTENSIONS.includes(extname(text).toLowerCase())) {
      throw new InvalidArgumentError(`${flag} writes Arrow or Parquet: name the file ${SEEDS_OUT_EXTENSIONS.map((e) => `*${e}`).join(', ')}, got '${text}'.`);
    }
    return text;
  });
}

/** `--seeds-out FILE`, for `run` and `sweep`. */
export function seedsOutOption(): Option {
  return recordsOutOption('--seeds-out', 'one row per (grid point, case, seed)');
}

/** `--requests-out FILE`, for `run`: the per-request records (src/run/request-records.ts). */
export function requestsOutOption(): Option {
  return recordsOutOption('--requests-out', "one row per counted arrival (and per model call of an agent task) of each case's first --requests-seeds seeds");
}

/** Seeds a case records with `--requests-out` when `--requests-seeds` is not given. */
export const DEFAULT_REQUEST_SEEDS = 1;

/** `--requests-seeds N`: how many of each case's first seeds `--requests-out` records. */
export function requestSeedsOption(): Option {
  return new Option('--requests-seeds <n>', `seeds of each case --requests-out records, 0 .. n - 1 (default: ${DEFAULT_REQUEST_SEEDS}, at most ${MAX_REQUEST_SEEDS})`)
    .argParser((text) => parseInteger(text, '--requests-seeds', 1, MAX_REQUEST_SEEDS));
}
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

/** A count option's parser: an integer from `min` to `max`. */
export function count(option: string, min: number, max = Number.MAX_SAFE_INTEGER): (text: string) => number {
  return (text) => parseInteger(text, option, min, max);
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** `--vary` (hint, sweep): per path, a list of values or a numeric range, as a sweep grid takes it. */
export type Vary = Record<string, (number | string)[] | { from: number; to: number; step: number }>;

/**
 * `--vary PATH=RANGE` (repeatable): `4..32` (step 1), `4..32:4`, or a comma list of values
 * (numbers where they read as numbers, names otherwise).
 */
export function collectVary(text: string, previous: Vary = {}): Vary {
  const eq = text.indexOf('=');
  const path = eq < 0 ? '' : text.slice(0, eq).trim();
  const spec = eq < 0 ? '' : text.slice(eq + 1).trim();
  if (path === '' || spec === '') {
    throw new InvalidArgumentError(`--vary must be PATH=RANGE (gpu.slots=4..32, gpu.slots=4..32:4 or router.policy=least-loaded,cache-aware), got '${text}'.`);
  }
  if (Object.hasOwn(previous, path)) throw new InvalidArgumentError(`--vary names ${path} twice.`);
  const range = /^(.+?)\.\.(.+?)(?::(.+))?$/.exec(spec);
  if (range !== null) {
    const [from, to, step] = [range[1]!.trim(), range[2]!.trim(), (range[3] ?? '1').trim()];
    if (![from, to, step].every((s) => NUMBER.test(s))) {
      throw new InvalidArgumentError(`--vary ${path}: a range is FROM..TO or FROM..TO:STEP in numbers, got '${spec}'.`);
    }
    const r = { from: Number(from), to: Number(to), step: Number(step) };
    if (r.step <= 0) throw new InvalidArgumentError(`--vary ${path}: the step must be positive, got '${step}'.`);
    if (r.to < r.from) throw new InvalidArgumentError(`--vary ${path}: ${to} is below ${from}.`);
    return { ...previous, [path]: r };
  }
  const values = spec.split(',').map((v) => v.trim());
  if (values.some((v) => v === '')) throw new InvalidArgumentError(`--vary ${path}: an empty value in '${spec}'.`);
  return { ...previous, [path]: values.map((v) => (NUMBER.test(v) ? Number(v) : v)) };
}

/** `--cost EXPR`, checked for syntax here; its paths are checked against the problem later. */
export function parseCostOption(text: string): string {
  try {
    parseCost(text);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
  return text;
}

/** `--confidence P`: a share of seeds in (0, 1]. */
export function parseConfidence(text: string): number {
  const v = NUMBER.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(v > 0 && v <= 1)) throw new InvalidArgumentError(`--confidence must be a number in (0, 1], got '${text}'.`);
  return v;
}

/** `--cors ORIGIN` (repeatable, or a comma list): exact origins, as a browser sends them. */
export function collectOrigins(text: string, previous: readonly string[] = []): readonly string[] {
  const origins = text.split(',').map((o) => o.trim());
  for (const origin of origins) {
    // an origin is scheme, host and port: a trailing slash or a path never matches a browser's
    if (URL.canParse(origin) && new URL(origin).origin === origin) continue;
    throw new InvalidArgumentError(`--cors takes origins such as http://localhost:8888 (scheme, host, port; no path), got '${origin}'.`);
  }
  return [...previous, ...origins];
}

/** `--queue redis://HOST:PORT`, for `serve` and `worker`. */
export function queueOption(description: string): Option {
  return new Option('--queue <url>', description).argParser((text) => {
    try {
      return parseQueueUrl(text);
    } catch (err) {
      throw new InvalidArgumentError(`${(err as Error).message}.`);
    }
  });
}

/** `--vary PATH=RANGE`, as `hint` and `sweep` take it. */
export function varyOption(description: string): Option {
  return new Option('--vary <path=range>', `${description}, repeatable: 4..32, 4..32:4 or a comma list`).argParser(collectVary);
}

/** `--case`, as `run`, `hint` and `sweep --vary` take it. */
export function caseOption(): Option {
  return new Option('-c, --case <names>', 'case to run, repeatable or a comma list; "all" for every case').argParser(collectCases);
}

/** `--set`, as `run`, `hint` and `sweep --vary` take it. */
export function setOption(): Option {
  return new Option('-s, --set <path=value>', 'override a problem field, repeatable (gpu.slots=32)').argParser(collectSet);
}

/** The options `run` and `hint` share, as commander Options to add to a command. */
export function simulationOptions(): Option[] {
  return [
    caseOption(),
    new Option('-n, --seeds <n>', "independent seeds (instances) per case, or 'auto': until each verdict is decided")
      .argParser(parseSeeds)
      .default(DEFAULT_SEEDS),
    maxSeedsOption(),
    new Option('--seed <base>', "first seed (default: the problem's seed)").argParser(parseSeedBase),
    setOption(),
    new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')}`)
      .argParser(parseEngine)
      .default('auto'),
  ];
}

/** `--max-seeds`, for the commands that take `--seeds`. */
export function maxSeedsOption(): Option {
  return new Option('--max-seeds <n>', `most seeds an undecided configuration takes (default: ${grouped(DEFAULT_MAX_SEEDS)} with --seeds auto, else --seeds)`).argParser(parseMaxSeeds);
}

/**
 * 4096 as "4,096", for the command table's help: toLocaleString's first call loads ICU's number
 * formats, and the table is defined at every start, `--version`'s included.
 */
function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `-f, --format`, for any command that prints results: these formats, table by default. */
export function formatOption(formats: readonly RunFormat[] = OUTPUT_FORMATS): Option {
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

/** `--tolerance`: how far above a capacity the lowest load not passing may be, a share (0.02) or a percentage (2%). */
export function parseTolerance(text: string): number {
  const trimmed = text.trim();
  const percent = trimmed.endsWith('%');
  const digits = percent ? trimmed.slice(0, -1).trim() : trimmed;
  const v = NUMBER.test(digits) ? Number(digits) / (percent ? 100 : 1) : Number.NaN;
  if (!(v >= 0.001 && v <= 1)) throw new InvalidArgumentError(`--tolerance must be a share from 0.001 to 1 (or 0.1% to 100%), got '${text}'.`);
  return v;
}
