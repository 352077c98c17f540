/**
 * `servesim serve`: listens, and on Ctrl-C lets the requests in flight finish before it closes
 * the server and the engines. Needs `npm run build` first (the pool's workers run from dist/).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/program.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { captureIo, serveInProcess, until } from './cli-support.js';

afterAll(async () => {
  await closeEngines();
});

describe('servesim serve', () => {
  it('drains the requests in flight on Ctrl-C, then exits 0', async () => {
    const { base, stderr, interrupt, exit } = await serveInProcess(['--max-concurrent', '1']);

    const health = await (await fetch(`${base}/healthz`)).json();
    expect(health.sweeps.max).toBe(1);
    const inFlight = fetch(`${base}/v1/sweeps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ problem: 'mmc', grid: { 'traffic.duration': ['1000s'] }, seeds: 4 }),
    });
    await until(async () => (await (await fetch(`${base}/healthz`)).json()).sweeps.running === 1);
    interrupt();

    const res = await inFlight;
    expect(res.status).toBe(200);
    expect((await res.json()).rows).toHaveLength(1);
    expect(await exit).toBe(0);
    expect(stderr()).toContain('stopping: finishing the requests in flight');
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('reports a port it cannot listen on as a usage error', async () => {
    const { io, stderr } = captureIo();
    expect(await main(['node', 'servesim', 'serve', '--host', '203.0.113.1', '--port', '0'], { loadProblem, selectCases, runProblem }, io)).toBe(2);
    expect(stderr()).toMatch(/servesim: cannot listen on 203\.0\.113\.1:0: .*EADDRNOTAVAIL/);
  });
});
