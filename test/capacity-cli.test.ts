/**
 * `servesim capacity` end to end on a tiny grid of queues (fixed seeds, a low confidence: a
 * probe decides at once), its three formats, Ctrl-C, and its usage errors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { CapacityResult } from '../src/capacity/api.js';
import { main } from '../src/cli/program.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { captureIo, runCli, until } from './cli-support.js';

afterAll(closeEngines);

const capacity = (...args: string[]) => runCli('capacity', ...args);
const tiny = ['mmc', '--vary', 'server.replicas=1,2', '--set', 'traffic.duration=20s', '--set', 'confidence=0.5', '--cost', 'server.replicas', '--seeds', '16', '--tolerance', '5%', '--engine', 'cpu'];

describe('servesim capacity', () => {
  it('prints each design\'s capacity, the front and the count; a line a round on stderr', async () => {
    const { code, out, err } = await capacity(...tiny);
    expect(code).toBe(0);
    expect(out).toContain('mmc — M/M/4 at 80% load (Erlang C check)\n');
    expect(out).toContain('capacity: the highest traffic.rate scale at which every case passes, to within 5% (0.001x to 1000x)\n');
    expect(out).toMatch(/^server\.replicas\s+cost\s+capacity\s+req\/s\s+seeds\s+not passing above\s+front$/m);
    expect(out).toMatch(/^1\s+1\s+[\d.]+x\s+[\d.]+\s+16\s+[\d.]+x (FAIL|UNDECIDED)\s+\*$/m);
    expect(out).toMatch(/^Pareto front, cheapest first: server\.replicas=1 \(1: [\d.]+ req\/s\); server\.replicas=2 \(2: [\d.]+ req\/s\)$/m);
    expect(out).toMatch(/\d+ probes of 2 designs in \d+ rounds, [\d,]+ instances\n$/);
    expect(err).toMatch(/^round 1: 2 probes \(\d pass, \d fail[^)]*\); 0 of 2 designs settled$/m);
    expect(err).toContain('engine: pool\n');
  });

  it('writes JSON and CSV with the same capacities', async () => {
    const json = await capacity(...tiny, '-f', 'json');
    expect(json.code).toBe(0);
    const result = JSON.parse(json.out) as CapacityResult;
    expect(result).toMatchObject({ problemId: 'mmc', load: 'traffic.rate', cost: 'server.replicas', seeds: 16, maxSeeds: 16, tolerance: 0.05 });
    const [one, two] = result.designs;
    // requests per second are mmc's 32 a second at each capacity's scale
    for (const d of [one!, two!]) expect(d.requests_per_second).toBeCloseTo(32 * d.rate_scale!, 1);
    expect(two!.requests_per_second!).toBeGreaterThan(one!.requests_per_second!);
    expect(result.designs.map((d) => d.pareto)).toEqual([true, true]);

    const csv = await capacity(...tiny, '-f', 'csv');
    expect(csv.code).toBe(0);
    const [head, ...rows] = csv.out.trimEnd().split('\n');
    expect(head).toBe('server.replicas,cost,rate_scale,requests_per_second,requests_per_second_per_gpu,requests_per_dollar,seeds,above_rate_scale,above_verdict,above_why,above_shown_on,probes,instances,pareto');
    expect(rows.map((r) => r.split(',').slice(0, 4))).toEqual(result.designs.map((d) => [String(d.values['server.replicas']), String(d.cost), String(d.rate_scale), String(d.requests_per_second)]));
  });

  it('stops on Ctrl-C with status 130', async () => {
    const { io, stderr, interrupt } = captureIo();
    const code = main(['node', 'servesim', 'capacity', ...tiny.slice(0, -6), '--seeds', '256', '--engine', 'cpu'], { loadProblem, selectCases, runProblem }, io);
    await until(() => stderr().includes('round 1'), 60_000);
    interrupt();
    expect(await code).toBe(130);
    expect(stderr()).toContain('cancelled\n');
  });

  it('names the option or field that is wrong', async () => {
    expect((await capacity('mmc', '--vary', 'server.replicas=1,2', '--tolerance', '0')).err).toMatch(/--tolerance must be a share from 0\.001 to 1/);
    expect((await capacity('mmc', '--cost', 'server.replicas')).err).toMatch(/required option '--vary <path=range>' not specified/);
    const loadVaried = await capacity('mmc', '--vary', 'traffic.rate=10,20', '--cost', 'server.replicas');
    expect(loadVaried.code).toBe(2);
    expect(loadVaried.err).toContain('vary.traffic.rate: the search sets the load itself');
    // the default cost counts GPU slots, which a plain queue has none of
    const noGpu = await capacity('mmc', '--vary', 'server.replicas=1,2');
    expect(noGpu.code).toBe(2);
    expect(noGpu.err).toMatch(/cost: gpu\.replicas in "gpu\.replicas \* gpu\.slots" is not a number in the problem at server\.replicas=1 \(the default cost: give one, --cost\)/);
  });
});
