/**
 * Cost in dollars: the cost variables `gpus` (replicas x the profile's tp) and
 * `dollars_per_hour` (gpus x the price per GPU-hour), and the hint's default objective, which
 * is dollars an hour when the problem's GPUs have a price and slots otherwise.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../src/cli/program.js';
import { costVariable, DEFAULT_COST, defaultCost, DOLLARS_COST, parseCost } from '../src/hint/cost.js';
import { runHints } from '../src/hint/search.js';
import type { HintConfiguration, HintResult } from '../src/hint/api.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';

afterAll(closeEngines);

const H100 = 55.04 / 8;
const hot = (...sets: string[]) => loadProblem('problems/hot-prefix.yaml', sets);

describe('the cost variables', () => {
  it('parse as names an expression reads', () => {
    expect(parseCost('dollars_per_hour + 0.1 * gpus').paths).toEqual(['dollars_per_hour', 'gpus']);
  });

  it('gpus counts replicas x tp; dollars_per_hour prices them', () => {
    const p = hot('gpu.profile=llama-3.1-8b-instruct/h100/tp4', 'gpu.replicas=3');
    expect(costVariable(p, 'gpus')).toBe(12);
    expect(costVariable(p, 'dollars_per_hour')).toBeCloseTo(12 * H100, 12);
    const a100 = hot('gpu.profile=llama-3.1-8b-instruct/a100-80/tp2');
    expect(costVariable(a100, 'dollars_per_hour')).toBeCloseTo(6 * 2 * (27.44705 / 8), 12);
    // a price the problem gives wins over the list price
    expect(costVariable(hot('gpu.profile=llama-3.1-8b-instruct/h100/tp4', 'gpu.pricePerHour=2.5'), 'dollars_per_hour')).toBe(6 * 4 * 2.5);
  });

  it('count a profile that states no tp as one GPU a replica, and price it only when told', () => {
    expect(costVariable(hot(), 'gpus')).toBe(6);
    expect(() => costVariable(hot(), 'dollars_per_hour')).toThrow(
      /^cost: dollars_per_hour needs a price: gpu\.profile 8b-h100 names no GPU type with a list price .*; set gpu\.pricePerHour$/,
    );
    expect(costVariable(hot('gpu.pricePerHour=3'), 'dollars_per_hour')).toBe(18);
    expect(costVariable(hot('gpu.profile.tp=2', 'gpu.pricePerHour=3'), 'dollars_per_hour')).toBe(36);
  });

  it('refuse a problem with no GPU pool', () => {
    expect(() => costVariable(loadProblem('problems/mmc.yaml'), 'gpus')).toThrow(/^cost: gpus counts GPUs, and mmc has no gpu pool$/);
  });

  it("default to dollars an hour when every problem's GPUs have a price, else to slots", () => {
    expect(defaultCost([hot('gpu.profile=llama-3.1-8b-instruct/h100/tp2')])).toBe(DOLLARS_COST);
    expect(defaultCost([hot('gpu.pricePerHour=2'), hot('gpu.profile=llama-3.1-8b-instruct/a100-80/tp1')])).toBe(DOLLARS_COST);
    expect(defaultCost([hot()])).toBe(DEFAULT_COST);
    expect(defaultCost([hot('gpu.profile=llama-3.1-8b-instruct/h100/tp2'), hot()])).toBe(DEFAULT_COST);
  });
});

/** Every configuration a hint result shows. */
function configurations(result: HintResult): HintConfiguration[] {
  return [...result.hints.flatMap((h) => [h.found, ...h.cheaper]), ...result.failing];
}

describe('the hint', () => {
  const tiny = { cases: ['as-given'], seeds: 2 };

  it('minimises dollars an hour by default on a priced profile, each configuration costed from its own profile', async () => {
    const result = await runHints({
      ...tiny,
      problem: 'hot-prefix',
      vary: {
        'gpu.profile': ['llama-3.1-8b-instruct/h100/tp1', 'llama-3.1-8b-instruct/h100/tp2'],
        'gpu.replicas': [2, 4],
      },
    });
    expect(result.cost).toBe(DOLLARS_COST);
    const shown = configurations(result);
    expect(shown.length).toBeGreaterThan(0);
    for (const c of shown) {
      const tp = c.values['gpu.profile'] === 'llama-3.1-8b-instruct/h100/tp2' ? 2 : 1;
      expect(c.cost).toBeCloseTo((c.values['gpu.replicas'] as number) * tp * H100, 9);
    }
  });

  it('keeps minimising slots where some GPUs have no price', async () => {
    let result = await runHints({ ...tiny, problem: 'hot-prefix', vary: { 'gpu.slots': [4, 8] } });
    expect(result.cost).toBe(DEFAULT_COST);
    for (const c of configurations(result)) expect(c.cost).toBe(6 * (c.values['gpu.slots'] as number));
    result = await runHints({ ...tiny, problem: 'hot-prefix', vary: { 'gpu.profile': ['8b-h100', 'llama-3.1-8b-instruct/h100/tp2'] } });
    expect(result.cost).toBe(DEFAULT_COST);
  });

  it('names the grid point whose profile has no price, before simulating', async () => {
    await expect(
      runHints({ ...tiny, problem: 'hot-prefix', vary: { 'gpu.profile': ['llama-3.1-8b-instruct/h100/tp2', '8b-h100'] }, cost: 'dollars_per_hour' }),
    ).rejects.toThrow(/^cost: dollars_per_hour needs a price: gpu\.profile 8b-h100 .*set gpu\.pricePerHour \(at gpu\.profile=8b-h100\)$/);
  });

  it('prints dollars an hour in the table', async () => {
    let out = '';
    const io = {
      stdout: { write: (t: string) => (out += t) },
      stderr: { write: () => true, isTTY: false },
      onInterrupt: () => () => undefined,
    } as unknown as CliIo;
    const args = ['hint', 'hot-prefix', '--set', 'gpu.profile=llama-3.1-8b-instruct/h100/tp2', '--set', 'router.policy=least-loaded'];
    const code = await main(['node', 'servesim', ...args, '--vary', 'gpu.replicas=4,6', '--case', 'as-given', '--seeds', '2'], { loadProblem, selectCases, runProblem }, io);
    expect(code).toBe(0);
    expect(out).toContain('cost: dollars_per_hour');
    expect(out).toMatch(/gpu\.replicas=[46] \(cost \$(55\.04|82\.56)\/h\)/);
  });
});
