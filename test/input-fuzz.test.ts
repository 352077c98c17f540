/**
 * Issue 12: generated problems, YAML texts, `--set` strings, sweeps and cost expressions through
 * the parse entry points. Every input must end in a valid typed result or a ServesimError that
 * names the field at fault; never another exception, a hang or a change to Object.prototype or
 * Array.prototype (the contract and the generators are in input-fuzz-support.ts). A fixed
 * seed, so CI runs the same inputs every time.
 */
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { closeWatchdog, ENTRY_POINTS, type EntryPoint } from './input-fuzz-support.js';

const SEED = 20_261_201;
/** Runs per entry point: 10,500 inputs in all, about 20 s on a busy 2-core machine. */
const RUNS: Record<keyof typeof ENTRY_POINTS, number> = { object: 3000, yaml: 1000, set: 2500, sweep: 1500, cost: 2500 };

interface Count {
  inputs: number;
  valid: number;
  refused: number;
  codes: Record<string, number>;
}
const counts = new Map<string, Count>();

/** Long runs of one character (a 900 KB field path) as `aaaaaaaaaa...(900000 x "a")`. */
function abbreviate(text: string): string {
  return text.replace(/(.)\1{99,}/gs, (run, c: string) => `${c.repeat(10)}...(${run.length} x ${JSON.stringify(c)})`);
}

/** fast-check's report, and the error the input caused, abbreviated for CI logs. */
function report<T>(details: fc.RunDetails<T>): void {
  const message = fc.defaultReportMessage(details);
  if (message === undefined) return;
  const cause = details.errorInstance;
  if (cause instanceof Error) {
    cause.message = abbreviate(cause.message);
    cause.stack = abbreviate(cause.stack ?? '');
  }
  throw new Error(abbreviate(message), { cause });
}

function check<T>({ entry, arb, run }: EntryPoint<T>, numRuns: number): void {
  const count: Count = { inputs: 0, valid: 0, refused: 0, codes: {} };
  counts.set(entry, count);
  const property = fc.property(arb, (input) => {
    count.inputs++;
    const out = run(input);
    if (out.valid) count.valid++;
    else {
      count.refused++;
      count.codes[out.code] = (count.codes[out.code] ?? 0) + 1;
    }
  });
  // a failure is shrunk to a small input, for at most a minute of runs and shrinking
  fc.assert(property, { seed: SEED, numRuns, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: true, reporter: report });
}

describe('parse entry points under generated input', () => {
  afterAll(async () => {
    await closeWatchdog();
    const rows = [...counts].map(([entry, c]) => ({ entry, ...c, codes: JSON.stringify(c.codes) }));
    console.log(`input fuzz, seed ${SEED}: ${rows.reduce((n, r) => n + r.inputs, 0)} inputs; refused = a ServesimError naming the field`);
    console.table(rows);
  });

  it('problem objects: shipped problems with fields set, deleted, shared or hostile (problemFromObject)', () => {
    check(ENTRY_POINTS.object, RUNS.object);
  });

  it('problem texts: the same problems as YAML, roughened, some with --set (parseProblem)', () => {
    check(ENTRY_POINTS.yaml, RUNS.yaml);
  });

  it('--set strings on a shipped problem (applyOverrides through problemFromObject)', () => {
    check(ENTRY_POINTS.set, RUNS.set);
  });

  it('sweeps: shipped or inline problems, small grids, huge ranges (sweepFromObject)', () => {
    check(ENTRY_POINTS.sweep, RUNS.sweep);
  });

  it('cost expressions, deeply nested and long ones included (parseCost)', () => {
    check(ENTRY_POINTS.cost, RUNS.cost);
  });
});
