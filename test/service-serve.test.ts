/**
 * `servesim serve`: listens, and on Ctrl-C lets the requests in flight finish before it closes
 * the server and the engines. Needs `npm run build` first (the pool's workers run from dist/).
 */
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/program.js';
import type { CliIo } from '../src/cli/run-command.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';

async function until(test: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

afterAll(async () => {
  await closeEngines();
});

describe('servesim serve', () => {
  it('drains the requests in flight on Ctrl-C, then exits 0', async () => {
    let stderr = '';
    let interrupt: (() => void) | undefined;
    const io: CliIo = {
      stdout: { write: () => true },
      stderr: new Writable({
        write(chunk, _encoding, callback) {
          stderr += String(chunk);
          callback();
        },
      }),
      onInterrupt(handler) {
        interrupt = handler;
        return () => (interrupt = undefined);
      },
    };
    const exit = main(['node', 'servesim', 'serve', '--port', '0', '--max-concurrent', '1'], { loadProblem, selectCases, runProblem }, io);
    await until(() => /serving on http:\/\/\S+ /.test(stderr));
    const base = /serving on (http:\/\/\S+) /.exec(stderr)![1]!;

    const health = await (await fetch(`${base}/healthz`)).json();
    expect(health.sweeps.max).toBe(1);
    const inFlight = fetch(`${base}/v1/sweeps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ problem: 'mmc', grid: { 'traffic.duration': ['1000s'] }, seeds: 4 }),
    });
    await until(async () => (await (await fetch(`${base}/healthz`)).json()).sweeps.running === 1);
    interrupt!();

    const res = await inFlight;
    expect(res.status).toBe(200);
    expect((await res.json()).rows).toHaveLength(1);
    expect(await exit).toBe(0);
    expect(stderr).toContain('stopping: finishing the requests in flight');
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('reports a port it cannot listen on as a usage error', async () => {
    let stderr = '';
    const io: CliIo = {
      stdout: { write: () => true },
      stderr: new Writable({
        write(chunk, _encoding, callback) {
          stderr += String(chunk);
          callback();
        },
      }),
      onInterrupt: () => () => {},
    };
    expect(await main(['node', 'servesim', 'serve', '--host', '203.0.113.1', '--port', '0'], { loadProblem, selectCases, runProblem }, io)).toBe(2);
    expect(stderr).toMatch(/servesim: cannot listen on 203\.0\.113\.1:0: .*EADDRNOTAVAIL/);
  });
});
