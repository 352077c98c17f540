/**
 * `servesim capacity` end to end on a tiny grid of queues (fixed seeds, a low confidence: a
 * probe decides at once), its three formats, Ctrl-C, and its usage errors; `servesim report`
 * of its JSON.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('servesim report of a capacity result', () => {
  const dir = mkdtempSync(join(tmpdir(), 'servesim-capacity-report-'));
  const file = join(dir, 'capacity.json');
  let result: CapacityResult;
  beforeAll(async () => {
    // every design at the same cost: only the one that carries the most is on the front
    const { code, out } = await capacity(...tiny.map((a) => (a === 'server.replicas' ? '1' : a)), '-f', 'json');
    expect(code).toBe(0);
    writeFileSync(file, out);
    result = JSON.parse(out) as CapacityResult;
  }, 60_000);

  it('writes the capacity report page beside the JSON, the front\'s designs marked', async () => {
    const front = result.designs.filter((d) => d.pareto).map((d) => d.values['server.replicas']);
    expect(front).toEqual([2]);
    const { code, err } = await runCli('report', file);
    expect(code).toBe(0);
    expect(err).toBe(`wrote ${join(dir, 'capacity.html')}\n`);
    const html = readFileSync(join(dir, 'capacity.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>\n/);
    expect(html).toContain('<p class="sub">servesim capacity report: 2 designs over server.replicas</p>');
    expect([...html.matchAll(/<tr class="front"><td>([^<]*)<\/td>/g)].map((m) => Number(m[1]))).toEqual(front);
    expect(html.match(/<circle class="on"/g)).toHaveLength(front.length);
    for (const d of result.designs) expect(html).toContain(`<td class="num">${d.requests_per_second}</td>`);
  });

  it('names the field a malformed capacity result gets wrong', async () => {
    const refused = async (change: (r: Record<string, unknown>) => void): Promise<string> => {
      const bad = structuredClone(result) as unknown as Record<string, unknown>;
      change(bad);
      const path = join(dir, 'bad.json');
      writeFileSync(path, JSON.stringify(bad));
      const { code, err } = await runCli('report', path, '--out', '-');
      expect(code).not.toBe(0);
      return err;
    };
    const designs = (r: Record<string, unknown>) => r['designs'] as Record<string, unknown>[];
    expect(await refused((r) => delete designs(r)[1]!['rate_scale'])).toMatch(/is not a capacity result \(servesim capacity --format json\): designs\.1\.rate_scale: /);
    expect(await refused((r) => (designs(r)[0]!['values'] = {}))).toContain('designs.0.values.server.replicas: missing: every design has a value on each of paths');
    expect(await refused((r) => (r['unsettled'] = [2]))).toContain('unsettled.0: 2 is not a design\'s index (2 designs)');
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{ "designs": ');
    expect((await runCli('report', notJson)).err).toContain(`${notJson} is not JSON`);
    const withHint = await runCli('report', file, '--hint', file);
    expect(withHint.code).toBe(2);
    expect(withHint.err).toContain('--hint goes with a sweep\'s Arrow results');
  });
});
