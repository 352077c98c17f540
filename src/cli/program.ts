/**
 * The command table of `servesim` and its error policy. main.ts runs it with the real modules
 * and the process's streams; tests run it with doubles.
 */
import { Command, CommanderError, Option } from 'commander';
import { ServesimError } from '../errors.js';
import {
  EXIT,
  formatOption,
  simulationOptions,
  type SimulationOptionValues,
} from './options.js';
import { addHintCommand } from './hint-command.js';
import { addProfilesCommand } from './profiles-command.js';
import { addReportCommand } from './report-command.js';
import { runCommand, type CliDeps, type CliIo } from './run-command.js';
import { addSweepCommand, type SweepDeps, type SweepIo } from './sweep-command.js';
import { registerServe } from './serve-command.js';
import { registerWorker } from './worker-command.js';
import { packageVersion } from '../version.js';

export type { CliDeps, CliIo } from './run-command.js';
export type { SweepDeps, SweepIo } from './sweep-command.js';

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
    .addOption(formatOption())
    .addOption(new Option('--check', 'exit 1 when any case fails, 3 when one is undecided (within seed noise), else 0'))
    .addHelpText(
      'after',
      '\nOutput goes to stdout, progress and the engine used to stderr. With several problems,\n' +
        'tables follow each other, JSON is an array and CSV gains a leading problem column.\n\n' +
        'Examples:\n' +
        '  servesim run problems/hot-prefix.yaml\n' +
        '  servesim run mmc --seeds 16\n' +
        '  servesim run hot-prefix --seeds auto --check   # seeds until each case is decided\n' +
        '  servesim run problems/hot-prefix.yaml --case peak-hour,server-dies --seeds 256\n' +
        '  servesim run problems/coding-agents.yaml --set router.policy=prefix-affinity -f csv',
    )
    .action(async (files: string[], opts: SimulationOptionValues) => {
      setExit(await runCommand(files, opts, deps, io));
    });

  addSweepCommand(program, deps, io, setExit);

  registerServe(program, io, setExit);
  registerWorker(program, io, setExit);
  addReportCommand(program, io, setExit);

  addHintCommand(program, io, setExit);
  addProfilesCommand(program, io, setExit);

  return program;
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
