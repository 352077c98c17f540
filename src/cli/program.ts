/**
 * The command table of `servesim` and its error policy. main.ts runs it with the real modules
 * and the process's streams; tests run it with doubles. Defining the commands loads commander
 * and the option parsers only; each action imports its command's module when it runs
 * (lazy.ts), so `--version` and `--help` start in a fraction of the time.
 */
import { Command, CommanderError, Option } from 'commander';
import { ServesimError } from '../errors.js';
import { DEFAULT_COST, DOLLARS_COST } from '../hint/cost.js';
import { CPU_CHUNKS, DEFAULT_LOCK_MS, GPU_CHUNKS } from '../queue/connection.js';
import { DEFAULT_LIMITS } from '../service/context.js';
import { DEFAULT_MAX_INSTANCES } from '../sweep/limits.js';
import { packageVersion } from '../version.js';
import type { HintOptionValues } from './hint-command.js';
import { commands } from './lazy.js';
import {
  caseOption,
  collectOrigins,
  count,
  ENGINE_CHOICES,
  EXIT,
  EXTENSIONS,
  formatOption,
  MAX_SEED,
  maxSeedsOption,
  RUN_FORMATS,
  seedsOutOption,
  requestsOutOption,
  requestSeedsOption,
  parseChoice,
  parseConfidence,
  parseCostOption,
  parseEngine,
  parseInteger,
  parseSeeds,
  parseTolerance,
  queueOption,
  setOption,
  simulationOptions,
  SWEEP_FORMATS,
  varyOption,
} from './options.js';
import type { CapacityOptionValues } from './capacity-command.js';
import type { CompareOptionValues } from './compare-command.js';
import type { ReportCommandOptions } from './report-command.js';
import type { CliDeps, CliIo, RunOptionValues } from './run-command.js';
import type { ServeOptionValues } from './serve-command.js';
import type { SweepDeps, SweepIo, SweepOptionValues } from './sweep-command.js';
import type { WorkerOptionValues } from './worker-command.js';

export type { CliDeps, CliIo } from './run-command.js';
export type { SweepDeps, SweepIo } from './sweep-command.js';

/** Seeds per case `hint` takes when none are asked for: until each verdict is decided. */
const HINT_SEEDS = 'auto';

/** The commands' dependencies; the sweep runner defaults to the real one. */
export type ProgramDeps = CliDeps & Partial<SweepDeps>;

/**
 * The commander program. Every command gets `-h, --help`; the root has `-V, --version`.
 * Actions report their exit status through `setExit`.
 */
export function buildProgram(deps: ProgramDeps, io: SweepIo, setExit: (code: number) => void): Command {
  const program = new Command('servesim')
    .description('Monte Carlo simulation of LLM-serving designs: which design meets its goals')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .option('--adapter <name>', 'the WebGPU adapter to run the GPU engine on: part of its name (default: $SERVESIM_ADAPTER, else the best found)')
    .showSuggestionAfterError()
    // errors come back to main() as exceptions, so the exit status is decided in one place
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
      // one prefix for every error, commander's and ours
      outputError: (text, write) => write(text.replace(/^error: /, 'servesim: ')),
    });

  // the adapter search reads SERVESIM_ADAPTER, as a worker or service started by other means does
  program.hook('preAction', () => {
    const { adapter } = program.opts<{ adapter?: string }>();
    if (adapter !== undefined) process.env['SERVESIM_ADAPTER'] = adapter;
  });

  const run = program
    .command('run')
    .description(
      "simulate each problem's cases over many seeds and report which pass; " +
        'exits 0 whether cases pass or fail (with --check: 1 if any fails, 3 if any is undecided)',
    )
    .argument('<problem...>', 'problem files (YAML or JSON), or ids of the shipped problems (mmc, hot-prefix, coding-agents)');
  for (const option of simulationOptions()) run.addOption(option);
  run
    .addOption(formatOption(RUN_FORMATS))
    .addOption(new Option('--check', 'exit 1 when any case fails, 3 when one is undecided (within seed noise), else 0'))
    .addOption(seedsOutOption())
    .addOption(requestsOutOption())
    .addOption(requestSeedsOption())
    .addHelpText(
      'after',
      '\nOutput goes to stdout, progress and the engine used to stderr. With several problems,\n' +
        'tables follow each other, JSON is an array and CSV gains a leading problem column.\n\n' +
        'Examples:\n' +
        '  servesim run problems/hot-prefix.yaml\n' +
        '  servesim run mmc --seeds 16\n' +
        '  servesim run hot-prefix --seeds auto --check   # seeds until each case is decided\n' +
        '  servesim run problems/hot-prefix.yaml --case peak-hour,server-dies --seeds 256\n' +
        '  servesim run problems/coding-agents.yaml --set router.policy=prefix-affinity -f csv\n' +
        '  servesim run hot-prefix --case as-given -f vllm-bench   # a vllm bench serve result a case, one a line\n' +
        '  servesim run mmc --seeds 256 --seeds-out seeds.parquet   # also a row a seed: its counts, percentiles, goals met\n' +
        '  servesim run hot-prefix --case as-given --requests-out requests.parquet   # also a row a request of seed 0',
    )
    .action(async (files: string[], opts: RunOptionValues) => {
      const { runCommand } = await commands.run();
      setExit(await runCommand(files, opts, deps, io));
    });

  const sweep = program
    .command('sweep')
    .description(
      'simulate a problem at every point of a grid of settings (a sweep file, or a problem and --vary), ' +
        'each over its cases and seeds; one row per grid point and case',
    )
    .argument('<file>', 'sweep file (YAML or JSON; see sweeps/README.md), or with --vary a problem file or the id of a shipped problem');
  for (const option of sweepOptions()) sweep.addOption(option);
  sweep
    .addHelpText(
      'after',
      '\nResults go to stdout (or --out), progress and the engine used to stderr. Arrow goes to\n' +
        'a .arrow or .feather file as the Arrow IPC file format, to .arrows and stdout as the IPC\n' +
        'stream; .parquet is Parquet. On Ctrl-C, SIGTERM, SIGHUP or a failure the finished grid\n' +
        'points are still written (an Arrow or Parquet table says it is partial and which points\n' +
        'it lacks) and the others listed on stderr (exit status 130 when cancelled).\n\n' +
        'Examples:\n' +
        '  servesim sweep sweeps/hot-prefix-slots.yaml\n' +
        '  servesim sweep hot-prefix --vary gpu.slots=4..16:4 --vary router.policy=least-loaded,cache-aware --seeds 16\n' +
        '  servesim sweep sweeps/coding-agents-replicas.yaml --out replicas.arrow\n' +
        '  servesim sweep sweeps/mmc.yaml --seeds 8 --format csv > mmc.csv',
    )
    .action(async (file: string, opts: SweepOptionValues) => {
      const { sweepCommand } = await commands.sweep();
      setExit(await sweepCommand(file, opts, deps, io));
    });

  program
    .command('serve')
    .description('serve sweeps (Arrow, JSON, CSV), background jobs, the shipped problems and hints over HTTP')
    .addOption(new Option('-p, --port <port>', 'port to listen on (0: any free port)').argParser(count('--port', 0, 65_535)).default(8080))
    .addOption(new Option('--host <host>', 'address to listen on (0.0.0.0: every interface)').default('127.0.0.1'))
    .addOption(
      new Option('--max-concurrent <n>', 'sweeps and hint searches running at once; more requests get 429, jobs queue')
        .argParser(count('--max-concurrent', 1, 1024))
        .default(DEFAULT_LIMITS.maxConcurrent),
    )
    .addOption(
      new Option('--sync-limit <instances>', 'largest sweep (points x cases x seeds) POST /v1/sweeps runs while the client waits')
        .argParser(count('--sync-limit', 1))
        .default(DEFAULT_LIMITS.syncMaxInstances),
    )
    .addOption(
      new Option('--max-instances <instances>', 'largest sweep taken at all (as a job)')
        .argParser(count('--max-instances', 1))
        .default(DEFAULT_LIMITS.maxInstances),
    )
    .addOption(
      new Option('--keep-jobs <n>', 'finished jobs kept in memory for their results')
        .argParser(count('--keep-jobs', 1))
        .default(DEFAULT_LIMITS.keepFinishedJobs),
    )
    .addOption(queueOption('run jobs on `servesim worker` processes through this Redis (docs/distributed.md)'))
    .addOption(
      new Option('--chunk-size <points>', 'with --queue: grid points per chunk (default: about 256 instances a chunk)')
        .argParser(count('--chunk-size', 1)),
    )
    .addOption(new Option('--cors <origins>', 'let pages from this origin call the API (a notebook, a dashboard); repeatable or a comma list').argParser(collectOrigins))
    .addHelpText(
      'after',
      '\nThe routes and their schemas: GET /openapi.json, as a page: GET /docs. Requests are logged to stderr.\n\n' +
        'Examples:\n' +
        '  servesim serve --port 8080\n' +
        "  curl -s localhost:8080/v1/sweeps -H 'content-type: application/json' -H 'accept: text/csv' \\\n" +
        '    -d \'{"problem": "mmc", "grid": {"server.slots": [4, 5]}, "seeds": 8}\'',
    )
    .action(async (opts: ServeOptionValues) => {
      const { serve } = await commands.serve();
      setExit(await serve(opts, io));
    });

  program
    .command('worker')
    .description('run grid points of the sweeps a `servesim serve --queue` service distributes')
    .addOption(queueOption('the Redis the service queues chunks on').makeOptionMandatory())
    .addOption(new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')}`).argParser(parseEngine).default('auto'))
    .addOption(
      new Option('--chunks <n>', `chunks held at once (default: ${CPU_CHUNKS} on the CPU pool, ${GPU_CHUNKS} on a GPU)`)
        .argParser((text) => parseInteger(text, '--chunks', 1, 64)),
    )
    .addOption(
      new Option('--lock-duration <ms>', "a chunk this worker stops renewing (it died) goes to another after this long; set it on every worker alike")
        .argParser((text) => parseInteger(text, '--lock-duration', 100, 3_600_000))
        .default(DEFAULT_LOCK_MS),
    )
    .addHelpText(
      'after',
      '\nResults are the same on any engine; the engine only decides how fast. See docs/distributed.md.\n\n' +
        'Examples:\n' +
        '  servesim worker --queue redis://10.0.0.5:6379\n' +
        '  servesim worker --queue redis://10.0.0.5:6379 --engine gpu',
    )
    .action(async (opts: WorkerOptionValues) => {
      const { work } = await commands.worker();
      setExit(await work(opts, io));
    });

  program
    .command('report')
    .description('write a sweep\'s results, or a capacity search\'s, as one self-contained HTML page of charts (no network needed to open it)')
    .argument('<results>', 'Arrow file (IPC file or stream, not Parquet) written by servesim sweep --out, or the JSON of servesim capacity --format json')
    .option('-o, --out <file>', 'HTML file to write, "-" for stdout (default: the results file with .html)')
    .option('--hint <file>', 'a hint result (servesim hint --format json) to show with the charts')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  servesim report results.arrow\n' +
        '  servesim report results.arrow --hint hint.json --out report.html\n' +
        '  servesim capacity hot-prefix --vary gpu.slots=4..32:4 --format json > capacity.json\n' +
        '  servesim report capacity.json',
    )
    .action(async (results: string, opts: ReportCommandOptions) => {
      const { reportCommand } = await commands.report();
      setExit(reportCommand(results, opts, io));
    });

  const hint = program
    .command('hint')
    .description(
      'search the cheapest configurations that pass every case (varying the given paths), with ' +
        'each case\'s margins and why the next cheaper configurations fail',
    )
    .argument('<problem>', 'problem file (YAML or JSON), or the id of a shipped problem')
    .addOption(varyOption('a path to search over').makeOptionMandatory())
    .addOption(
      // no commander default: the search picks dollars where the problem's GPUs have a price
      new Option('--cost <expr>', `cost to minimise: + - * / ( ) over numbers, paths, gpus and ${DOLLARS_COST} (default: ${DOLLARS_COST} when the GPU profile has a price, else ${DEFAULT_COST})`).argParser(
        parseCostOption,
      ),
    );
  for (const option of simulationOptions()) {
    hint.addOption(option.long === '--seeds' ? option.default(HINT_SEEDS) : option);
  }
  hint
    .addOption(new Option('--confidence <p>', "share of seeds that must meet every goal (default: the problem's)").argParser(parseConfidence))
    .addOption(new Option('--recheck-seed <base>', 'base seed of the re-check on fresh seeds (default: derived from --seed)').argParser((t) => parseInteger(t, '--recheck-seed', 0, MAX_SEED)))
    .addOption(formatOption(['table', 'json']))
    .addHelpText(
      'after',
      '\nNumeric paths are searched assuming more never hurts (bisection), and the cheaper neighbours\n' +
        'of what is found are evaluated to check it; each value of a named path (router.policy) is\n' +
        'searched on its own. Each point takes seeds until its verdict is decided (--seeds auto), and\n' +
        'what is found is re-checked with its neighbours on fresh seeds. Results go to stdout,\n' +
        'progress to stderr.\n\n' +
        'Examples:\n' +
        '  servesim hint problems/hot-prefix.yaml --set router.policy=least-loaded --vary gpu.slots=2..24\n' +
        '  servesim hint coding-agents --vary router.policy=round-robin,prefix-affinity --vary gpu.replicas=4..12 --vary gpu.slots=1..6\n' +
        "  servesim hint hot-prefix --vary gpu.slots=4..32:4 --cost 'gpu.replicas * gpu.slots + app.replicas' -f json",
    )
    .action(async (problem: string, opts: HintOptionValues) => {
      const { hintCommand } = await commands.hint();
      setExit(await hintCommand(problem, opts, io));
    });

  const capacity = program
    .command('capacity')
    .description(
      'find each design\'s highest load that passes every case (varying the given paths), as requests ' +
        'per second, per GPU and per dollar, with the Pareto front of cost against capacity',
    )
    .argument('<problem>', 'problem file (YAML or JSON), or the id of a shipped problem')
    .addOption(varyOption('a path whose values are the designs').makeOptionMandatory())
    .addOption(new Option('--cost <expr>', `cost of a design for the Pareto front, as hint takes it (default: ${DOLLARS_COST} when the GPU profile has a price, else ${DEFAULT_COST})`).argParser(parseCostOption));
  for (const option of simulationOptions()) {
    capacity.addOption(option.long === '--seeds' ? option.default(HINT_SEEDS) : option);
  }
  capacity
    .addOption(new Option('--confidence <p>', "share of seeds that must meet every goal (default: the problem's)").argParser(parseConfidence))
    .addOption(new Option('--tolerance <share>', 'stop when the lowest load not passing is within this share above the highest passing (default: 0.02)').argParser(parseTolerance))
    .addOption(formatOption())
    .addHelpText(
      'after',
      '\nThe load scale multiplies traffic.rate (with a trace, traffic.rateScale); the cases scale it as\n' +
        'always. From the problem as given each design doubles or halves its load to a bracket, then\n' +
        'bisects it; an undecided load counts as not passing. Designs share what they show, assuming\n' +
        'more on a numeric path never lowers the capacity, but a capacity is always a load its own\n' +
        'design passed at. Results go to stdout, a line per round of probes to stderr.\n\n' +
        'Examples:\n' +
        '  servesim capacity hot-prefix --vary router.policy=least-loaded,cache-aware --vary gpu.slots=4..32:4\n' +
        "  servesim capacity mmc --vary server.replicas=1..4 --cost server.replicas --seeds 64 -f csv",
    )
    .action(async (problem: string, opts: CapacityOptionValues) => {
      const { capacityCommand } = await commands.capacity();
      setExit(await capacityCommand(problem, opts, io));
    });

  const compare = program
    .command('compare')
    .description("run one case of a problem and hold its figures against a measured vllm bench serve result: servesim's, the measured one and the error")
    .argument('<result>', 'a vllm bench serve result (JSON, as --save-result writes it)')
    .argument('<problem>', 'problem file (YAML or JSON), or the id of a shipped problem');
  for (const option of simulationOptions()) compare.addOption(option);
  compare
    .addOption(formatOption(['table', 'json']))
    .addHelpText(
      'after',
      '\nThe figures both give are compared: request and output throughput, mean, median, p90,\n' +
        "p95 and p99 of TTFT, TPOT and end-to-end latency (docs/outputs.md). Error is servesim's over\n" +
        'the measured, less 1.\n\n' +
        'Examples:\n' +
        '  servesim compare run.json problems/profiles/validation/mixtral-codegen-5.yaml --seeds 16\n' +
        '  servesim compare run.json my-problem.yaml --case peak-hour --set gpu.slots=64 -f json',
    )
    .action(async (result: string, problem: string, opts: CompareOptionValues) => {
      const { compareCommand } = await commands.compare();
      setExit(await compareCommand(result, problem, opts, deps, io));
    });

  program
    .command('profiles')
    .description("list the GPU profiles gpu.profile may name, their sources, what the engines run and the GPU types' prices")
    .addOption(formatOption(['table', 'json']))
    .addHelpText(
      'after',
      '\nA problem names one as gpu.profile: 8b-h100, or a catalogue id such as\n' +
        'llama-3.1-8b-instruct/h100/tp2. JSON adds each source\'s coefficients as published.\n\n' +
        'Examples:\n' +
        '  servesim profiles\n' +
        '  servesim profiles -f json',
    )
    .action(async (opts: { format: 'table' | 'json' }) => {
      const { profilesCommand } = await commands.profiles();
      setExit(profilesCommand(opts, io));
    });

  return program;
}

/** `sweep`'s options: where and how the results go, the sweep file's settings overridden, or the grid without a file. */
function sweepOptions(): Option[] {
  return [
    new Option('-o, --out <file>', `write the results to this file; its extension (${EXTENSIONS}) picks the format`),
    new Option('-f, --format <format>', `output format: ${SWEEP_FORMATS.join(', ')} (default: from --out, else table)`)
      .argParser((text) => parseChoice(text, '--format', SWEEP_FORMATS)),
    new Option('--report <file>', 'also write the HTML report (as servesim report) of the finished points'),
    new Option('-n, --seeds <n>', "seeds per case and grid point, or 'auto': until each verdict is decided (default: the sweep file's)").argParser(parseSeeds),
    maxSeedsOption(),
    new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')} (default: the sweep file's)`)
      .argParser(parseEngine),
    new Option('--max-instances <n>', 'refuse a larger sweep (grid points x cases x seeds)')
      .argParser((text) => parseInteger(text, '--max-instances', 1, Number.MAX_SAFE_INTEGER))
      .default(DEFAULT_MAX_INSTANCES),
    varyOption('a grid path and its values, without a sweep file (FILE is then a problem)'),
    setOption(),
    caseOption(),
    seedsOutOption(),
  ];
}

/**
 * Parses `argv` (as process.argv: node, script, args...) and runs the command; resolves to the
 * exit status: 0 done (cases may still FAIL), 1 a bug (stack printed) or, with `run --check`, a
 * case that FAILs, 2 a usage or input error (`servesim: <message>`), 3 with `run --check` a case
 * UNDECIDED, 130 cancelled.
 */
export async function main(argv: readonly string[], deps: ProgramDeps, io: SweepIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(deps, io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    return reportError(err, io);
  }
}

/** The exit status of an error, after printing what the user needs to see. */
export function reportError(err: unknown, io: Pick<CliIo, 'stderr'>): number {
  if (err instanceof CommanderError) {
    // commander has printed its message (or the help, or the version) already
    return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (err instanceof ServesimError) {
    if (err.code === 'SERVESIM_CANCELLED') {
      io.stderr.write('cancelled\n');
      return EXIT.cancelled;
    }
    io.stderr.write(`servesim: ${err.message}\n`);
    return EXIT.usage;
  }
  io.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return EXIT.internal;
}
