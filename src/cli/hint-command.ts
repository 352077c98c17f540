/**
 * `servesim hint PROBLEM --vary PATH=RANGE...`: the cheapest configurations that pass every
 * case, why each passes (margins per case), and why the next cheaper ones fail. Each grid
 * point the search evaluates is reported on stderr as it finishes.
 */
import type { CaseMargin, HintConfiguration, HintRequest, HintResult, SearchResult } from '../hint/api.js';
import { DOLLARS_COST } from '../hint/cost.js';
import { describeValues } from '../hint/explain.js';
import { runHints } from '../hint/search.js';
import type { EngineChoice } from '../run/types.js';
import { EXIT, seedOptions, type Vary } from './options.js';
import { problemWithOverrides } from './problem-argument.js';
import { traceLine, type CliIo } from './run-command.js';

// the parser is the command table's (program.ts), with the other option parsers
export { collectVary } from './options.js';

type Values = Record<string, number | string>;

/** The options `hint` and `capacity` share: the grid, the cases, the seeds and the cost. */
export interface SearchOptionValues {
  readonly vary: Vary;
  readonly cost?: string;
  readonly case?: readonly string[] | 'all';
  readonly seeds: number | 'auto';
  readonly maxSeeds?: number;
  readonly seed?: number;
  readonly set?: readonly string[];
  readonly confidence?: number;
  readonly engine: EngineChoice;
}

export interface HintOptionValues extends SearchOptionValues {
  readonly recheckSeed?: number;
  readonly format: 'table' | 'json';
}

/** The request fields a search's options give, as `hint` and `capacity` both send them. */
export function searchRequest(problem: string, opts: SearchOptionValues): Omit<HintRequest, 'recheckSeed'> {
  return {
    problem: opts.set === undefined ? problem : problemWithOverrides(problem, opts.set),
    vary: opts.vary,
    cases: opts.case === undefined || opts.case === 'all' ? 'all' : [...opts.case],
    ...seedOptions(opts.seeds, opts.maxSeeds),
    engine: opts.engine,
    ...(opts.cost === undefined ? {} : { cost: opts.cost }),
    ...(opts.seed === undefined ? {} : { seed: opts.seed }),
    ...(opts.confidence === undefined ? {} : { confidence: opts.confidence }),
  };
}

/** Runs the `hint` command; resolves to the exit status. Input errors are thrown. */
export async function hintCommand(problem: string, opts: HintOptionValues, io: CliIo): Promise<number> {
  const request: HintRequest = {
    ...searchRequest(problem, opts),
    ...(opts.recheckSeed === undefined ? {} : { recheckSeed: opts.recheckSeed }),
  };
  return searchCommand(
    io,
    (signal) =>
      runHints(request, {
        baseDir: process.cwd(),
        signal,
        onTrace: (trace) => void io.stderr.write(traceLine(trace)),
        onProgress: (p) =>
          void io.stderr.write(`evaluated ${p.evaluated} (grid ${p.gridSize}): ${describeValues(p.values)}: ${p.verdict} (${p.seeds} seeds)\n`),
      }),
    (result) => (opts.format === 'json' ? `${JSON.stringify(result, null, 2)}\n` : formatHints(result)),
  );
}

/**
 * Runs a search as `hint` and `capacity` do: Ctrl-C (or a stop signal) cancels it, the engine
 * goes to stderr and the result, as `render` writes it, to stdout; resolves to the exit status.
 */
export async function searchCommand<R extends SearchResult>(io: CliIo, search: (signal: AbortSignal) => Promise<R>, render: (result: R) => string): Promise<number> {
  const controller = new AbortController();
  // held until the result is written: a signal after the search finishes the writing
  const release = io.onInterrupt(() => controller.abort());
  try {
    let result: R;
    try {
      result = await search(controller.signal);
    } catch (err) {
      if (controller.signal.aborted) {
        io.stderr.write('cancelled\n');
        return EXIT.cancelled;
      }
      throw err;
    }
    if (result.engine !== null) io.stderr.write(`engine: ${result.engine}\n`);
    io.stdout.write(render(result));
    return EXIT.ok;
  } finally {
    release();
  }
}

/** The readable report: each hint with its margins, its re-check and cheaper neighbours, what never passes, the count. */
export function formatHints(result: HintResult): string {
  const lines: string[] = [];
  lines.push(`${result.problemId} — ${result.title}`);
  const goals = [`success ≥ ${trim(result.goals.success * 100)}%`, `p99 ≤ ${trim(result.goals.p99_ms / 1000)} s`];
  if (result.goals.ttft_p99_ms !== undefined) goals.push(`ttft p99 ≤ ${trim(result.goals.ttft_p99_ms)} ms`);
  if (result.goals.tpot_p99_ms !== undefined) goals.push(`tpot p99 ≤ ${trim(result.goals.tpot_p99_ms)} ms`);
  goals.push(`pass prob ≥ ${trim(result.confidence)}`);
  const seeds = result.maxSeeds > result.seeds ? `${result.seeds} to ${result.maxSeeds} seeds until decided` : `${result.seeds} seeds`;
  lines.push(`goals: ${goals.join(', ')} · cost: ${result.cost}`);
  // the margin stops adding seeds, so it applies only where seeds are added
  const margin = result.maxSeeds > result.seeds ? `; a pass probability shown under ${trim(result.confidence + result.margin)} takes no more seeds` : '';
  lines.push(`${seeds} from ${result.seed}, re-checked from ${result.recheckSeed} · each case's verdict at ${trim(result.verdictLevel * 100)}% confidence${margin}`);
  lines.push('');
  if (result.hints.length === 0) lines.push('No configuration in the grid passes every case.');
  for (const [k, hint] of result.hints.entries()) {
    const title = k === 0 ? 'Cheapest passing' : 'Also passing';
    lines.push(`${title}: ${describeValues(hint.found.values)} (cost ${costText(result, hint.found.cost)})`);
    lines.push(...marginTable(hint.found.cases, result).map((l) => `  ${l}`));
    if (hint.found.recheck !== undefined) {
      lines.push(`  On fresh seeds (from ${result.recheckSeed}): ${hint.found.recheck.verdict}`);
      if (hint.found.recheck.verdict !== 'PASS') lines.push(...hint.found.recheck.cases.filter((m) => m.why !== '').map((m) => `    ${m.why}`));
    }
    if (hint.cheaper.length > 0) lines.push('  One step cheaper:');
    for (const c of hint.cheaper) {
      const what = `${describeValues(changed(c.values, hint.found.values))} (cost ${costText(result, c.cost)})`;
      lines.push(...verdict(what, c).map((l) => `    ${l}`));
    }
    if (!hint.holds) lines.push('  The re-check on fresh seeds does not agree: treat this answer as unsettled (more seeds: --max-seeds).');
    lines.push('');
  }
  for (const f of result.failing) {
    // the named values pick the family; the numbers are its most generous point
    const named = Object.fromEntries(Object.entries(f.values).filter(([, v]) => typeof v === 'string'));
    const numbers = Object.fromEntries(Object.entries(f.values).filter(([, v]) => typeof v !== 'string'));
    const what =
      Object.keys(numbers).length === 0
        ? describeValues(named)
        : `Nothing passes${Object.keys(named).length === 0 ? '' : ` with ${describeValues(named)}`}: even ${describeValues(numbers)}`;
    lines.push(...verdict(`${what} (cost ${costText(result, f.cost)})`, f), '');
  }
  if (result.monotonicityViolations.length > 0) {
    lines.push('The search assumed more never hurts; these points say otherwise (its answer may not be the cheapest):');
    lines.push(...result.monotonicityViolations.map((v) => `  ${v}`));
    lines.push('');
  }
  lines.push(`evaluated ${result.evaluated} of ${result.gridSize} grid points in ${result.rounds} round${result.rounds === 1 ? '' : 's'}`);
  return `${lines.join('\n')}\n`;
}

/** A configuration's cost: "$27.52/h" when the cost is dollars an hour, else the number. */
function costText(result: HintResult, cost: number): string {
  return result.cost === DOLLARS_COST ? `$${cost.toFixed(2)}/h` : trim(cost);
}

/**
 * "WHAT fails:" ("is undecided:") and a line per such case, or "WHAT passes too"; then the
 * re-check on fresh seeds, when there was one.
 */
function verdict(what: string, c: HintConfiguration): string[] {
  const open = c.cases.filter((m) => !m.passes);
  const head = c.verdict === 'PASS' ? [`${what} passes too`] : [`${what} ${c.verdict === 'FAIL' ? 'fails' : 'is undecided'}:`, ...open.map((m) => `  ${m.why}`)];
  return c.recheck === undefined ? head : [...head, `  on fresh seeds: ${c.recheck.verdict}`];
}

/** The values that differ from `base`: a neighbour differs in one path. */
function changed(values: Readonly<Values>, base: Readonly<Values>): Values {
  return Object.fromEntries(Object.entries(values).filter(([path, v]) => base[path] !== v));
}

/** Each case's verdict, seeds, pass probability with its interval, and its margin on every goal set. */
function marginTable(cases: readonly CaseMargin[], result: HintResult): string[] {
  const ttft = result.goals.ttft_p99_ms !== undefined;
  const tpot = result.goals.tpot_p99_ms !== undefined;
  const head = ['case', 'result', 'seeds', 'success %', 'p99 s', 'pass prob (interval)', 'success margin', 'p99 margin', ...(ttft ? ['ttft p99 margin'] : []), ...(tpot ? ['tpot p99 margin'] : [])];
  const rows = cases.map((m) => [
    m.case,
    m.verdict,
    String(m.seeds),
    fixed(Math.floor(m.success * 10000 + 1e-6) / 100, 2),
    fixed(m.p99_ms / 1000, 3),
    `${fixed(m.pass_probability, 2)} (${fixed(m.pass_probability_lo, 2)}-${fixed(m.pass_probability_hi, 2)})`,
    `${margin(m.success_margin * 100)} pt`,
    `${margin(m.p99_margin_ms / 1000)} s`,
    ...(ttft ? [`${margin(m.ttft_p99_margin_ms ?? Number.NaN)} ms`] : []),
    ...(tpot ? [`${margin(m.tpot_p99_margin_ms ?? Number.NaN)} ms`] : []),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const render = (cells: readonly string[]): string =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [render(head), render(widths.map((w) => '-'.repeat(w))), ...rows.map(render)];
}

function fixed(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '–';
}

/** A margin as resolved (src/hint/explain.ts), signed; scaling may add binary noise, so at most 4 decimals. */
function margin(v: number): string {
  return Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${Number(v.toFixed(4))}` : '–';
}

function trim(v: number): string {
  return String(Number(v.toFixed(4)));
}
