#!/usr/bin/env node
/**
 * The `servesim` bin: the real problem parser, runner and process streams, handed to the
 * command table in program.ts. Each is imported when a command first uses it (lazy.ts).
 */
import { closeEngines, realDeps } from './lazy.js';
import { EXIT } from './options.js';
import { main } from './program.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let interrupts = 0;
const code = await main(
  process.argv,
  realDeps,
  {
    stdout: process.stdout,
    stderr: process.stderr,
    onInterrupt(handler) {
      const listener = (): void => {
        // a second signal does not wait for the workers to wind down
        if (++interrupts > 1) process.exit(EXIT.cancelled);
        handler();
      };
      // a supervisor's stop (SIGTERM) or a closed terminal (SIGHUP) keeps finished work as Ctrl-C does
      for (const signal of STOP_SIGNALS) process.on(signal, listener);
      return () => STOP_SIGNALS.forEach((signal) => process.off(signal, listener));
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
