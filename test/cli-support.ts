/** Shared by the CLI and service tests: `servesim` commands run in this process. */
import { Writable } from 'node:stream';
import { main } from '../src/cli/program.js';
import type { CliIo } from '../src/cli/run-command.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { runProblem } from '../src/run/run.js';

/** `servesim ARGS` in this process: its exit status and what it wrote. */
export async function runCli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io = {
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false },
    onInterrupt: () => () => undefined,
  } as unknown as CliIo;
  const code = await main(['node', 'servesim', ...args], { loadProblem, selectCases, runProblem }, io);
  return { code, out, err };
}

/** Polls `test` until it holds, failing after `timeoutMs`. */
export async function until(test: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A CliIo that keeps what goes to stderr and lets the test press Ctrl-C. */
export function captureIo(): { io: CliIo; stderr: () => string; interrupt: () => void } {
  let text = '';
  let handler: (() => void) | undefined;
  const io: CliIo = {
    stdout: { write: () => true },
    stderr: new Writable({
      write(chunk, _encoding, callback) {
        text += String(chunk);
        callback();
      },
    }),
    onInterrupt(h) {
      handler = h;
      return () => (handler = undefined);
    },
  };
  return { io, stderr: () => text, interrupt: () => handler?.() };
}

/** `servesim serve ARGS` in this process, once it listens: its URL, its stderr, Ctrl-C and its exit status. */
export async function serveInProcess(args: readonly string[]): Promise<{ base: string; stderr: () => string; interrupt: () => void; exit: Promise<number> }> {
  const { io, stderr, interrupt } = captureIo();
  const exit = main(['node', 'servesim', 'serve', '--port', '0', ...args], { loadProblem, selectCases, runProblem }, io);
  await until(() => /serving on http:\/\/\S+ /.test(stderr()));
  return { base: /serving on (http:\/\/\S+) /.exec(stderr())![1]!, stderr, interrupt, exit };
}
