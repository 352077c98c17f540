/**
 * V8's inlining budget, raised for the reference engine when it loads (issue 14;
 * bench/results/reference-speed.md).
 *
 * TurboFan inlines into an optimised function at most 920 bytes of its callees' bytecode
 * (`--max-inlined-bytecode-size-cumulative`). simulate.ts's hot path is several times that,
 * split into the kernel's functions, so V8 compiled it as a dozen functions calling one
 * another on every event, and which dozen depended on the order they got hot in, so the same
 * engine ran at different speeds from one process to the next. With this budget each event
 * handler compiles with what it calls inlined (M/M/c's events run in three functions: the
 * loop, arrival and handleEvent): faster once compiled, a little slower while V8 compiles the
 * larger functions.
 *
 * The flag is process-wide (the pool's threads share it) and TurboFan reads it for each
 * function it optimises, so setting it here, before the engine has run, does what `node
 * --max-inlined-bytecode-size-cumulative=...` would; a value given to node is kept.
 */
import { setFlagsFromString } from 'node:v8';

const FLAG = '--max-inlined-bytecode-size-cumulative';
/**
 * Bytes of bytecode inlined into one optimised function, at most (V8's default is 920). 4,500
 * (f9b24e5) ran no faster once compiled and compiled slower (`npm run bench:reference --
 * 5b903d4` there: bench/results/reference-speed-5b903d4.md).
 */
const INLINING_BUDGET = 3000;

// (V8 reads its flags' underscores as dashes)
if (!process.execArgv.some((arg) => arg.replaceAll('_', '-').startsWith(FLAG))) setFlagsFromString(`${FLAG}=${INLINING_BUDGET}`);
