/**
 * `servesim capacity PROBLEM --vary PATH=RANGE...`: each design's highest load that passes
 * every case, as requests per second, per GPU and per dollar, and the Pareto front of cost
 * against capacity. Each round of probes is reported on stderr as it finishes.
 */
import type { CapacityDesign, CapacityRequest, CapacityResult } from '../capacity/api.js';
import { runCapacity } from '../capacity/search.js';
import { DOLLARS_COST } from '../hint/cost.js';
import { describeValues } from '../hint/explain.js';
import { csvField } from '../run/format.js';
import { searchCommand, searchRequest, type SearchOptionValues } from './hint-command.js';
import type { OutputFormat } from './options.js';
import type { CliIo } from './run-command.js';

export interface CapacityOptionValues extends SearchOptionValues {
  readonly tolerance?: number;
  readonly format: OutputFormat;
}

/** Runs the `capacity` command; resolves to the exit status. Input errors are thrown. */
export async function capacityCommand(problem: string, opts: CapacityOptionValues, io: CliIo): Promise<number> {
  const request: CapacityRequest = {
    ...searchRequest(problem, opts),
    ...(opts.tolerance === undefined ? {} : { tolerance: opts.tolerance }),
  };
  return searchCommand(
    io,
    (signal) =>
      runCapacity(request, {
        baseDir: process.cwd(),
        signal,
        onProgress: (p) => {
          const verdicts = [`${p.passed} pass`, `${p.failed} fail`, ...(p.undecided > 0 ? [`${p.undecided} undecided`] : []), ...(p.refused > 0 ? [`${p.refused} refused`] : [])];
          io.stderr.write(`round ${p.round}: ${p.probes} probe${p.probes === 1 ? '' : 's'} (${verdicts.join(', ')}); ${p.settled} of ${p.designs} designs settled\n`);
        },
      }),
    (result) => (opts.format === 'json' ? `${JSON.stringify(result, null, 2)}\n` : opts.format === 'csv' ? formatCapacityCsv(result) : formatCapacity(result)),
  );
}

/** The readable report: a row per design, the front marked, then the front by cost and what to doubt. */
export function formatCapacity(result: CapacityResult): string {
  const goals = [`success ≥ ${trim(result.goals.success * 100)}%`, `p99 ≤ ${trim(result.goals.p99_ms / 1000)} s`];
  if (result.goals.ttft_p99_ms !== undefined) goals.push(`ttft p99 ≤ ${trim(result.goals.ttft_p99_ms)} ms`);
  if (result.goals.tpot_p99_ms !== undefined) goals.push(`tpot p99 ≤ ${trim(result.goals.tpot_p99_ms)} ms`);
  goals.push(`pass prob ≥ ${trim(result.confidence)}`);
  const seeds = result.maxSeeds > result.seeds ? `${result.seeds} to ${result.maxSeeds} seeds until decided` : `${result.seeds} seeds`;
  const lines = [
    `${result.problemId} — ${result.title}`,
    `goals: ${goals.join(', ')} · cost: ${result.cost}`,
    `capacity: the highest ${result.load} scale at which every case passes, to within ${trim(result.tolerance * 100)}% (${trim(result.minScale)}x to ${trim(result.maxScale)}x)`,
    `${seeds} from ${result.seed} · each case's verdict at ${trim(result.verdictLevel * 100)}% confidence`,
    '',
  ];
  const perDollar = result.designs.some((d) => d.requests_per_dollar !== null);
  const perGpu = result.designs.some((d) => d.requests_per_second_per_gpu !== null);
  const head = [...result.paths, 'cost', 'capacity', 'req/s', ...(perGpu ? ['req/s/GPU'] : []), ...(perDollar ? ['req/$'] : []), 'seeds', 'not passing above', 'front'];
  const rows = result.designs.map((d) => [
    ...result.paths.map((p) => String(d.values[p])),
    costText(result, d.cost),
    d.rate_scale === null ? `< ${trim(d.above?.rate_scale ?? result.minScale)}x` : `${trim(d.rate_scale)}x`,
    number(d.requests_per_second),
    ...(perGpu ? [number(d.requests_per_second_per_gpu)] : []),
    ...(perDollar ? [number(d.requests_per_dollar)] : []),
    d.cases.length === 0 ? '–' : String(Math.max(...d.cases.map((c) => c.seeds))),
    d.above === null ? `none to ${trim(result.maxScale)}x` : `${trim(d.above.rate_scale)}x ${d.above.verdict}${d.above.shown_on === null ? '' : ` (${describeValues(differing(d.above.shown_on, d.values))})`}`,
    d.pareto ? '*' : '',
  ]);
  const numbers = new Set(['cost', 'capacity', 'req/s', 'req/s/GPU', 'req/$', 'seeds']);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const render = (cells: readonly string[]): string =>
    cells.map((c, i) => (numbers.has(head[i]!) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  lines.push(render(head), render(widths.map((w) => '-'.repeat(w))), ...rows.map(render), '');

  const front = result.designs.filter((d) => d.pareto).sort((a, b) => a.cost - b.cost);
  if (front.length === 0) lines.push('No design passes at any load tried.');
  else lines.push(`Pareto front, cheapest first: ${front.map((d) => `${describeValues(d.values)} (${costText(result, d.cost)}: ${number(d.requests_per_second)} req/s)`).join('; ')}`);
  const undecided = result.designs.filter((d) => d.above?.verdict === 'UNDECIDED' && d.above.shown_on === null);
  if (undecided.length > 0) {
    lines.push('', 'Undecided just above capacity (within seed noise there, or within the tolerance, where no more seeds were taken):');
    lines.push(...undecided.map((d) => `  ${describeValues(d.values)} at ${trim(d.above!.rate_scale)}x: ${d.above!.why}`));
  }
  if (result.designs.some((d) => d.above?.shown_on != null)) {
    lines.push('', 'A load above capacity with a design in brackets did not pass on that design, which has more: this one is taken not to pass there either.');
  }
  const refused = result.designs.filter((d) => d.above?.verdict === 'REFUSED');
  if (refused.length > 0) {
    lines.push('', 'Passing up to a load the problem refuses:');
    lines.push(...refused.map((d) => `  ${describeValues(d.values)} at ${trim(d.above!.rate_scale)}x: ${d.above!.why}`));
  }
  if (result.monotonicityViolations.length > 0) {
    lines.push('', 'The search assumed more never lowers the capacity; these probes say otherwise (each capacity is still a load its own design passed at):');
    lines.push(...result.monotonicityViolations.map((v) => `  ${v}`));
  }
  lines.push('', `${result.probes} probes of ${result.designs.length} designs in ${result.rounds} round${result.rounds === 1 ? '' : 's'}, ${result.instances.toLocaleString('en')} instances`);
  return `${lines.join('\n')}\n`;
}

/** One row per design: its values, cost, capacity and its edge above. */
export function formatCapacityCsv(result: CapacityResult): string {
  const columns: readonly [string, (d: CapacityDesign) => string | number | boolean | null][] = [
    ['cost', (d) => d.cost],
    ['rate_scale', (d) => d.rate_scale],
    ['requests_per_second', (d) => d.requests_per_second],
    ['requests_per_second_per_gpu', (d) => d.requests_per_second_per_gpu],
    ['requests_per_dollar', (d) => d.requests_per_dollar],
    ['seeds', (d) => (d.cases.length === 0 ? null : Math.max(...d.cases.map((c) => c.seeds)))],
    ['above_rate_scale', (d) => d.above?.rate_scale ?? null],
    ['above_verdict', (d) => d.above?.verdict ?? null],
    ['above_why', (d) => d.above?.why ?? null],
    ['above_shown_on', (d) => (d.above?.shown_on == null ? null : describeValues(differing(d.above.shown_on, d.values)))],
    ['probes', (d) => d.probes],
    ['instances', (d) => d.instances],
    ['pareto', (d) => d.pareto],
  ];
  const cell = (v: string | number | boolean | null): string => (v === null ? '' : csvField(String(v)));
  const lines = [
    [...result.paths, ...columns.map(([name]) => name)].map(csvField).join(','),
    ...result.designs.map((d) => [...result.paths.map((p) => cell(d.values[p]!)), ...columns.map(([, get]) => cell(get(d)))].join(',')),
  ];
  return `${lines.join('\n')}\n`;
}

/** The values of `other` that differ from `values`: the paths a neighbour has more of. */
function differing(other: Readonly<Record<string, number | string>>, values: Readonly<Record<string, number | string>>): Record<string, number | string> {
  return Object.fromEntries(Object.entries(other).filter(([path, v]) => values[path] !== v));
}

/** A design's cost: "$27.52/h" when the cost is dollars an hour, else the number. */
function costText(result: CapacityResult, cost: number): string {
  return result.cost === DOLLARS_COST ? `$${cost.toFixed(2)}/h` : trim(cost);
}

function number(v: number | null): string {
  return v === null ? '–' : String(v);
}

function trim(v: number): string {
  return String(Number(v.toFixed(4)));
}
