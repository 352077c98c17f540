/**
 * The stories docs/model.md section 8 says the model tells, on the two seed problems, with
 * placement and the failed replica drawn per seed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runProblem, closeEngines } from '../src/run/run.js';
import { loadProblem } from '../src/problem/parse.js';
import { closePool, problemFile } from './support.js';
import type { CaseSummary } from '../src/model/summary.js';

afterAll(async () => {
  await closePool();
  await closeEngines();
});

// Seeds until decided: 32 first, doubling up to 256 for the cases still within seed noise. A
// failing case is decided at 32; a passing one needs 64 at least (32 of 32 passing leave
// Clopper-Pearson's low end at 0.89, under the confidence of 0.9), and more near 0.9.
const SEEDS = 32;
const MAX_SEEDS = 256;

async function cases(name: string, sets: readonly string[] = [], maxSeeds = MAX_SEEDS): Promise<readonly CaseSummary[]> {
  const problem = loadProblem(problemFile(name), sets);
  const { rows } = await runProblem(problem, { seeds: SEEDS, maxSeeds, baseSeed: problem.seed, engine: 'cpu' });
  return rows;
}

const withVerdict = (rows: readonly CaseSummary[], verdict: CaseSummary['verdict']): string[] =>
  rows.filter((r) => r.verdict === verdict).map((r) => r.case);

describe('hot prefix (seed 1)', () => {
  it("as given: each seed's owner replica takes 85-90% of the calls and most requests time out", async () => {
    const [asGiven] = await cases('hot-prefix');
    expect(asGiven!.top_replica_share).toBeGreaterThanOrEqual(0.85);
    expect(asGiven!.top_replica_share).toBeLessThanOrEqual(0.9);
    expect(asGiven!.timed_out / asGiven!.requests).toBeGreaterThan(0.5);
  });

  it('as given it fails every case', async () => {
    for (const row of await cases('hot-prefix')) expect(row.verdict, row.case).toBe('FAIL');
  });

  it('least-loaded with gpu.slots=16 passes all four cases and keeps the hit rate high', async () => {
    const rows = await cases('hot-prefix', ['router.policy=least-loaded', 'gpu.slots=16']);
    expect(rows.map((r) => r.case)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
    for (const row of rows) {
      expect(row.verdict, `least-loaded ${row.case}`).toBe('PASS');
      expect(row.kv_hit_rate).toBeGreaterThan(0.9);
    }
  });

  // docs/model.md section 8: over 512 seeds only 83-85% meet the slow dependency's goals
  // (32 seeds once showed 31 and 30 of 32 and called it a pass), and more slots (cache-aware 20
  // to 32, bounded affinity 48 or 64) do not change it; the other three cases pass
  for (const [policy, sets] of [
    ['cache-aware', ['gpu.slots=16']],
    ['bounded-affinity', ['gpu.slots=32', 'router.boundedLoad=1.1']],
  ] as const) {
    it(`${policy} with ${sets.join(', ')} keeps the hit rate high but fails the slow dependency`, async () => {
      const rows = await cases('hot-prefix', [`router.policy=${policy}`, ...sets], 512);
      expect(withVerdict(rows, 'PASS'), policy).toEqual(['as-given', 'peak-hour', 'server-dies']);
      expect(withVerdict(rows, 'FAIL'), policy).toEqual(['slow-dependency']);
      for (const row of rows) expect(row.kv_hit_rate).toBeGreaterThan(0.9);
    });
  }

  it('bounded-affinity at the default c = 1.25 fails only the slow dependency, and more slots do not help', async () => {
    for (const slots of [32, 64]) {
      const rows = await cases('hot-prefix', ['router.policy=bounded-affinity', `gpu.slots=${slots}`]);
      expect(withVerdict(rows, 'FAIL'), `${slots} slots`).toEqual(['slow-dependency']);
      // server-dies passes about 91% of seeds (0.91, 0.89-0.92, over 2,048 at 32 slots): too
      // near 0.9 to decide in 256, so it may be UNDECIDED here, but it never fails
      expect(withVerdict(rows, 'PASS'), `${slots} slots`).toEqual(expect.arrayContaining(['as-given', 'peak-hour']));
    }
  });

  it('the slow dependency is the case that sets the slot count', async () => {
    const rows = await cases('hot-prefix', ['router.policy=least-loaded', 'gpu.slots=8']);
    expect(withVerdict(rows, 'FAIL')).toEqual(['slow-dependency']);
    expect(withVerdict(rows, 'PASS')).toEqual(['as-given', 'peak-hour', 'server-dies']);
  });
});

describe('coding agents (seed 2)', () => {
  it('as given (round robin): hit rate under 50% and it fails; affinity lifts it over 85%', async () => {
    const [rr] = await cases('coding-agents');
    const [affinity] = await cases('coding-agents', ['router.policy=prefix-affinity']);
    expect(rr!.case).toBe('as-given');
    expect(rr!.kv_hit_rate).toBeLessThan(0.5);
    expect(rr!.verdict).toBe('FAIL');
    expect(rr!.p99_ms).toBeGreaterThan(30_000);
    expect(affinity!.kv_hit_rate).toBeGreaterThan(0.85);
  });

  it('plain affinity piles random sessions unevenly and barely cuts p99; bounded affinity cuts it at least threefold', async () => {
    const [rr] = await cases('coding-agents');
    const [affinity] = await cases('coding-agents', ['router.policy=prefix-affinity']);
    const [bounded] = await cases('coding-agents', ['router.policy=bounded-affinity']);
    expect(affinity!.p99_ms * 1.5).toBeGreaterThan(rr!.p99_ms);
    expect(affinity!.top_replica_share).toBeGreaterThan(bounded!.top_replica_share);
    expect(bounded!.kv_hit_rate).toBeGreaterThan(0.8);
    expect(bounded!.p99_ms * 3).toBeLessThanOrEqual(rr!.p99_ms);
  });

  it('more replicas under round robin buy less than bounded affinity on the same replicas', async () => {
    const [more] = await cases('coding-agents', ['gpu.replicas=12']);
    const [bounded] = await cases('coding-agents', ['router.policy=bounded-affinity']);
    expect(more!.p99_ms).toBeGreaterThan(bounded!.p99_ms);
  });
});

describe('the conversation trace (problems/conversation-trace.yaml)', () => {
  it('GPU memory alone keeps little to reuse, so at 4 replicas prefix affinity does not pass the slow dependency where cache-aware passes every case', async () => {
    const affinity = await cases('conversation-trace', ['gpu.replicas=4', 'router.policy=prefix-affinity']);
    const aware = await cases('conversation-trace', ['gpu.replicas=4', 'router.policy=cache-aware']);
    for (const row of [...affinity, ...aware]) expect(row.kv_hit_rate).toBeLessThan(0.1);
    expect(withVerdict(aware, 'PASS')).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
    const slow = affinity.find((row) => row.case === 'slow-dependency')!;
    expect(slow.verdict).not.toBe('PASS');
    expect(slow.pass_probability).toBeLessThan(0.9);
  });

  it("a KV offload tier finds the context of a conversation's turn minutes later: 2M tokens a replica more than double prefix affinity's hit rate and cut mean TTFT in every case", async () => {
    // 32 seeds each, common random numbers: the same windows of the trace, with and without the tier
    const design = ['gpu.replicas=4', 'router.policy=prefix-affinity'];
    const without = await cases('conversation-trace', design, SEEDS);
    const tier = await cases('conversation-trace', [...design, 'gpu.offload.tokens=2000000'], SEEDS);
    for (const [i, row] of tier.entries()) {
      const before = without[i]!;
      expect(row.case).toBe(before.case);
      expect(before.kv_hit_rate, row.case).toBeLessThan(0.1);
      expect(row.kv_hit_rate, row.case).toBeGreaterThan(Math.max(0.15, 2 * before.kv_hit_rate));
      expect(row.kv_hit_rate_offload, row.case).toBeGreaterThan(0.08);
      expect(row.ttft_mean_ms, row.case).toBeLessThan(0.95 * before.ttft_mean_ms);
    }
  });
});

describe('long answers on little KV memory (gpu.kv)', () => {
  it('incremental KV with preemption runs more sequences at once than reserving each answer up front and meets the TTFT goal reservation misses, at a recomputation the columns show', async () => {
    // 32 seeds each, common random numbers: the same arrivals under both
    const reserve = await cases('long-answers', ['gpu.kv=reserve'], SEEDS);
    const incremental = await cases('long-answers', [], SEEDS);
    const row = (rows: readonly CaseSummary[], name: string) => rows.find((r) => r.case === name)!;
    const [before, after] = [row(reserve, 'as-given'), row(incremental, 'as-given')];
    expect(before.ttft_p99_ms).toBeGreaterThan(1000);
    expect(after.ttft_p99_ms).toBeLessThan(1000);
    expect(after.pass_probability).toBeGreaterThan(before.pass_probability);
    const [busyBefore, busyAfter] = [row(reserve, 'peak-hour'), row(incremental, 'peak-hour')];
    // past both designs' capacity at peak hour: more sequences at once, fewer calls timed out
    expect(busyAfter.mean_batch).toBeGreaterThan(1.2 * busyBefore.mean_batch);
    expect(busyAfter.timed_out).toBeLessThan(busyBefore.timed_out / 3);
    expect(busyAfter.ttft_p99_ms).toBeLessThan(busyBefore.ttft_p99_ms);
    expect(busyAfter.preemptions_per_call).toBeGreaterThan(0);
    expect(busyAfter.recomputed_tokens_per_call).toBeGreaterThan(0);
    for (const r of reserve) expect(r.preemptions_per_call, r.case).toBeNaN();
  });
});

describe('long prompts under a tight TPOT goal (gpu.disaggregation)', () => {
  const verdicts = async (sets: readonly string[]) => (await cases('long-prompts', sets)).map((r) => r.verdict);

  it('splitting 8 GPUs into 3 prefill and 5 decode replicas meets the TPOT goal that the same 8 co-located miss', async () => {
    const together = await cases('long-prompts');
    for (const r of together) {
      expect(r.verdict, r.case).toBe('FAIL');
      expect(r.tpot_p99_ms, r.case).toBeGreaterThan(12.5);
    }
    const split = await cases('long-prompts', ['gpu.disaggregation.prefill=3']);
    for (const r of split) {
      expect(r.verdict, r.case).toBe('PASS');
      expect(r.tpot_p99_ms, r.case).toBeLessThan(12.5);
    }
  });

  it('on short prompts co-location is cheaper: 3 GPUs co-located pass, every split of 3 fails, and a split needs 4', async () => {
    const short = ['workload.unique=500', 'traffic.rate=60', 'gpu.replicas=3'];
    expect(await verdicts(short)).toEqual(['PASS', 'PASS']);
    expect(await verdicts([...short, 'gpu.disaggregation.prefill=1'])).toContain('FAIL');
    expect(await verdicts([...short, 'gpu.disaggregation.prefill=2'])).toContain('FAIL');
    expect(await verdicts([...short, 'gpu.replicas=4', 'gpu.disaggregation.prefill=1'])).toEqual(['PASS', 'PASS']);
  });
});
