#!/usr/bin/env node
/**
 * The `servesim` bin: the real problem parser, runner and process streams, handed to the
 * command table in program.ts.
 */
import { loadProblem, selectCases } from '../problem/parse.js';
import { closeEngines, runProblem } from '../run/run.js';
import { EXIT } from './options.js';
import { main } from './program.js';

let interrupts = 0;
const code = await main(
  process.argv,
  { loadProblem, selectCases, runProblem },
  {
    stdout: process.stdout,
    stderr: process.stderr,
    onInterrupt(handler) {
      const listener = (): void => {
        // a second Ctrl-C does not wait for the workers to wind down
        if (++interrupts > 1) process.exit(EXIT.cancelled);
        handler();
      };
      process.on('SIGINT', listener);
      return () => void process.off('SIGINT', listener);
    },
  },
);
// the pool's worker threads would otherwise hold the process open until their idle timeout
await closeEngines();
if (code === EXIT.cancelled) {
  // worker threads or a GPU device may still hold the event loop after an abort
  process.exit(code);
}
process.exitCode = code;
