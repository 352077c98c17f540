import { describe, expect, it } from 'vitest';
import type { Problem } from '../src/model/problem.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';
import { csvField, formatCsv, formatJson, formatTable } from '../src/run/format.js';
import type { RunResult } from '../src/run/types.js';

/** A row of a request workload: NaN where it has no such component. */
function row(fields: Partial<CaseSummary> = {}): CaseSummary {
  return {
    ...(Object.fromEntries(SUMMARY_COLUMNS.map((c) => [c, Number.NaN])) as unknown as CaseSummary),
    case: 'as-given',
    seeds: 64,
    requests: 64_000,
    success: 0.9912,
    success_lo: 0.99,
    success_hi: 0.9925,
    p50_ms: 812.5,
    p90_ms: 1250,
    p99_ms: 1875.25,
    p99_lo_ms: 1700,
    p99_hi_ms: 2100,
    p99_all_ms: 2000,
    pass_probability: 0.9375,
    pass_probability_lo: 0.8476,
    pass_probability_hi: 0.9827,
    interval_level: 0.95,
    verdict: 'PASS',
    undecided: '',
    missed: '',
    passes: true,
    kv_hit_rate: 0.8512,
    gpu_utilization: 0.734,
    mean_batch: 12.34,
    batch_occupancy: 12.34 / 16,
    kv_in_use: 0.4125,
    kv_in_use_peak: 0.875,
    rejected: 0,
    timed_out: 563,
    died: 0,
    top_replica_share: 0.26,
    gpu_wait_mean_ms: 12.5,
    gpu_wait_probability: 0.4,
    gpu_wait_p99_ms: 80,
    ttft_p99_ms: 420,
    tpot_p99_ms: 31.5,
    app_utilization: 0.2,
    router_utilization: 0.01,
    longest_queue: 17,
    longest_queue_at: 'gpu',
    overloaded: 0,
    overloaded_seeds: 0,
    overload_reason: '',
    ...fields,
  };
}

const NO_SUCCESS = row({
  case: 'server-dies',
  success: 0,
  p50_ms: Number.NaN,
  p90_ms: Number.NaN,
  p99_ms: Number.NaN,
  p99_lo_ms: Number.NaN,
  p99_hi_ms: Number.NaN,
  verdict: 'FAIL',
  passes: false,
  pass_probability: 0,
  pass_probability_lo: 0,
  pass_probability_hi: 0.0561,
});

// a row whose pass probability's interval straddles the confidence
const NOISY = row({
  case: 'peak-hour',
  verdict: 'UNDECIDED',
  undecided: 'pass_probability,p99',
  missed: '',
  passes: false,
});

const GOALS = { success: 0.99, p99: 2_000_000, ttftP99: null, tpotP99: null };

// only the fields the report reads: a whole Problem is the parser's business
const PROBLEM = {
  id: 'hot-prefix',
  title: 'Hot prefix',
  goals: GOALS,
  confidence: 0.9,
  seed: 1,
} as unknown as Problem;

const RESULT: RunResult = {
  problem: PROBLEM,
  rows: [row(), NO_SUCCESS],
  meta: {
    problemId: 'hot-prefix',
    engine: 'pool',
    adapter: null,
    batches: [],
    seeds: 64,
    maxSeeds: 64,
    baseSeed: 1,
    servesimVersion: '0.1.0',
    trace: null,
  },
};

describe('formatCsv', () => {
  it('writes the header in SUMMARY_COLUMNS order', () => {
    const lines = formatCsv([row()]).split('\n');
    expect(lines[0]).toBe(SUMMARY_COLUMNS.join(','));
    expect(lines[1]!.split(',')).toHaveLength(SUMMARY_COLUMNS.length);
    expect(lines[2]).toBe('');
  });

  it('writes NaN as an empty field and booleans as words', () => {
    const [, line] = formatCsv([NO_SUCCESS]).split('\n');
    const fields = line!.split(',');
    const at = (col: keyof CaseSummary): string => fields[SUMMARY_COLUMNS.indexOf(col)]!;
    expect(at('p99_ms')).toBe('');
    expect(at('p50_ms')).toBe('');
    expect(at('success')).toBe('0');
    expect(at('passes')).toBe('false');
    expect(at('verdict')).toBe('FAIL');
    expect(at('undecided')).toBe('');
    expect(at('case')).toBe('server-dies');
  });

  it('puts the verdict and its intervals after pass_probability, and batch occupancy, KV in use and preemptions after mean_batch', () => {
    const after = (col: keyof CaseSummary): readonly (keyof CaseSummary)[] =>
      SUMMARY_COLUMNS.slice(SUMMARY_COLUMNS.indexOf(col) + 1);
    expect(after('pass_probability').slice(0, 7)).toEqual(['pass_probability_lo', 'pass_probability_hi', 'interval_level', 'verdict', 'undecided', 'missed', 'passes']);
    expect(after('mean_batch').slice(0, 5)).toEqual(['batch_occupancy', 'kv_in_use', 'kv_in_use_peak', 'preemptions_per_call', 'recomputed_tokens_per_call']);
    // then, under gpu.disaggregation, each pool's load and the KV transfers
    expect(after('recomputed_tokens_per_call').slice(0, 6)).toEqual(['prefill_utilization', 'decode_utilization', 'prefill_batch_occupancy', 'decode_batch_occupancy', 'transfer_ms', 'transfer_wait_ms']);
    // the list of undecided goals is one field, quoted for its commas
    const [, line] = formatCsv([NOISY]).split('\n');
    expect(line).toContain(',0.95,UNDECIDED,"pass_probability,p99",,false,');
  });

  it('writes Infinity so readers parse it', () => {
    const [, line] = formatCsv([row({ p99_all_ms: Infinity })]).split('\n');
    expect(line!.split(',')[SUMMARY_COLUMNS.indexOf('p99_all_ms')]).toBe('Infinity');
  });

  it('quotes as RFC 4180', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    const [, line] = formatCsv([row({ case: 'burst, "x2"' })]).split('\n');
    expect(line!.startsWith('"burst, ""x2""",')).toBe(true);
  });

  it('adds a problem column and can leave the header out', () => {
    const first = formatCsv([row()], { problem: 'hot-prefix' });
    expect(first.split('\n')[0]).toBe(['problem', ...SUMMARY_COLUMNS].join(','));
    expect(first.split('\n')[1]!.startsWith('hot-prefix,as-given,')).toBe(true);
    const next = formatCsv([row()], { problem: 'coding-agents', header: false });
    expect(next.split('\n')).toHaveLength(2);
    expect(next.startsWith('coding-agents,as-given,')).toBe(true);
  });
});

describe('formatJson', () => {
  it('round-trips every column, NaN as null', () => {
    const parsed = JSON.parse(formatJson(RESULT)) as {
      problem: { id: string; goals: { success: number; p99_ms: number } };
      meta: { engine: string };
      rows: Record<string, unknown>[];
    };
    expect(parsed.problem.id).toBe('hot-prefix');
    expect(parsed.problem.goals).toEqual({ success: 0.99, p99_ms: 2000 });
    expect(parsed.meta.engine).toBe('pool');
    expect(Object.keys(parsed.rows[0]!)).toEqual([...SUMMARY_COLUMNS]);
    expect(parsed.rows.map((r) => r['verdict'])).toEqual(['PASS', 'FAIL']);
    [row(), NO_SUCCESS].forEach((sent, i) => {
      for (const col of SUMMARY_COLUMNS) {
        const v = sent[col];
        expect(parsed.rows[i]![col], col).toEqual(typeof v === 'number' && Number.isNaN(v) ? null : v);
      }
    });
  });

  it('writes several runs as an array', () => {
    const parsed = JSON.parse(formatJson([RESULT, RESULT])) as unknown[];
    expect(parsed).toHaveLength(2);
  });
});

describe('formatTable', () => {
  const text = formatTable([...RESULT.rows, NOISY], GOALS, {
    ...RESULT.meta,
    title: 'Hot prefix',
    confidence: 0.9,
  });
  const lines = text.split('\n');

  it('names the problem, engine and goals', () => {
    expect(lines[0]).toBe('hot-prefix — Hot prefix');
    expect(lines[1]).toContain('engine: pool');
    expect(lines[1]).toContain('64 seeds from 1');
    expect(lines[1]).toContain('verdicts at 95% (intervals 95%)');
    expect(lines[1]).toContain('success ≥ 99%');
    expect(lines[1]).toContain('p99 ≤ 2 s');
    expect(lines[1]).toContain('pass prob ≥ 0.9');
  });

  it('has one aligned row per case with its verdict', () => {
    const header = lines.find((l) => l.startsWith('case'))!;
    const body = lines.filter((l) => l.startsWith('as-given') || l.startsWith('server-dies') || l.startsWith('peak-hour'));
    expect(body).toHaveLength(3);
    expect(body[0]).toMatch(/ PASS /);
    expect(body[1]).toMatch(/ FAIL /);
    expect(body[2]).toMatch(/ UNDECIDED /);
    const col = header.indexOf('result');
    for (const l of body) expect(l.slice(col)).toMatch(/^(PASS|FAIL|UNDECIDED) /);
    // right-aligned numbers end under their titles
    const end = header.indexOf('p99 s') + 'p99 s'.length;
    expect(body[0]!.slice(0, end).endsWith('1.875')).toBe(true);
    expect(body[1]!.slice(0, end).endsWith('–')).toBe(true);
    // the pass probability with its interval, the GPU by its batch occupancy, the busiest replica's share
    const prob = header.indexOf('pass prob (interval)') + 'pass prob (interval)'.length;
    expect(body[0]!.slice(0, prob).endsWith('0.94 (0.85-0.98)')).toBe(true);
    expect(body[1]!.slice(0, prob).endsWith('0.00 (0.00-0.06)')).toBe(true);
    expect(body[0]).toContain('gpu batch 77.1%');
    const top = header.indexOf('top replica %') + 'top replica %'.length;
    expect(body[0]!.slice(0, top).endsWith('26.0')).toBe(true);
    // KV in use beside it, with its peak
    const kv = header.indexOf('kv in use % (peak)') + 'kv in use % (peak)'.length;
    expect(body[0]!.slice(0, kv).endsWith('41.3 (88)')).toBe(true);
  });

  it("shows the KV offload tier's part of the hit rate where the replicas have one", () => {
    const table = formatTable([row({ kv_hit_rate: 0.1926, kv_hit_rate_gpu: 0.0876, kv_hit_rate_offload: 0.105 })], GOALS, { problemId: 'p' });
    expect(table).toContain('19.3 (10.5 tier)');
    expect(lines.find((l) => l.startsWith('as-given'))).not.toContain('tier');
  });

  it('shows preemptions per call beside KV in use where gpu.kv is incremental and a call was preempted', () => {
    const table = formatTable([row({ preemptions_per_call: 0.3125, recomputed_tokens_per_call: 812 }), row({ case: 'flash-crowd', preemptions_per_call: 0.0042 }), NOISY], GOALS, { problemId: 'p' }).split('\n');
    const header = table.find((l) => l.startsWith('case'))!;
    expect(header).toMatch(/kv in use % \(peak\) +preempt\/call +top replica %/);
    const end = header.indexOf('preempt/call') + 'preempt/call'.length;
    const body = table.filter((l) => ['as-given', 'flash-crowd', 'peak-hour'].some((c) => l.startsWith(c)));
    // a rare preemption keeps its digits; a row under reserve has none
    expect(body.map((l) => l.slice(0, end).trimEnd().split(/ +/).at(-1))).toEqual(['0.31', '0.0042', '–']);
    // incremental without a preemption, and reserve (NaN), add no column
    expect(formatTable([row({ preemptions_per_call: 0 }), row()], GOALS, { problemId: 'p' })).not.toContain('preempt');
    expect(lines.some((l) => l.includes('preempt'))).toBe(false);
  });

  it("shows a KV transfer's link time and its wait for decode KV where some row is disaggregated", () => {
    const split = { prefill_utilization: 0.8, decode_utilization: 0.4, prefill_batch_occupancy: 0.1875, decode_batch_occupancy: 0.5 };
    const table = formatTable([row({ ...split, transfer_ms: 4, transfer_wait_ms: 0.5 }), row({ case: 'flash-crowd', ...split, transfer_ms: 12.3456, transfer_wait_ms: 0 }), NOISY], GOALS, { problemId: 'p' }).split('\n');
    const header = table.find((l) => l.startsWith('case'))!;
    expect(header).toMatch(/kv in use % \(peak\) +xfer ms \(wait\) +top replica %/);
    const end = header.indexOf('xfer ms (wait)') + 'xfer ms (wait)'.length;
    const body = table.filter((l) => ['as-given', 'flash-crowd', 'peak-hour'].some((c) => l.startsWith(c)));
    // a co-located row has no transfers
    expect(body.map((l) => l.slice(0, end).trimEnd().split(/  +/).at(-1))).toEqual(['4.00 (0.50)', '12.35 (0.00)', '–']);
    // after the preemptions where both show
    const both = formatTable([row({ preemptions_per_call: 0.25, transfer_ms: 4, transfer_wait_ms: 0.5 })], GOALS, { problemId: 'p' });
    expect(both).toMatch(/preempt\/call +xfer ms \(wait\) +top replica %/);
    // co-located rows alone add no column
    expect(formatTable([row(), NOISY], GOALS, { problemId: 'p' })).not.toContain('xfer');
    expect(lines.some((l) => l.includes('xfer'))).toBe(false);
  });

  it('names the GPU busiest by its KV when its memory is fuller than its batches', () => {
    const table = formatTable([row({ batch_occupancy: 0.29, kv_in_use: 0.8125 })], GOALS, { problemId: 'p' });
    expect(table).toContain('gpu kv 81.3%');
  });

  it('shows the seeds each case took with seeds until decided', () => {
    const auto = formatTable([row({ seeds: 256 })], GOALS, { problemId: 'p', seeds: 32, maxSeeds: 4096, baseSeed: 1 }).split('\n');
    expect(auto[1]).toContain('32 to 4096 seeds until decided from 1');
    const header = auto.find((l) => l.startsWith('case'))!;
    expect(header).toMatch(/^case\s+result\s+seeds\s+success %/);
    const end = header.indexOf('seeds') + 'seeds'.length;
    expect(auto.find((l) => l.startsWith('as-given'))!.slice(0, end).endsWith('256')).toBe(true);
    // a fixed seed count has no such column
    expect(lines.find((l) => l.startsWith('case'))).not.toMatch(/ seeds /);
  });

  it('leaves out the replica column without GPUs', () => {
    const plain = formatTable([row({ batch_occupancy: Number.NaN, gpu_utilization: Number.NaN, top_replica_share: Number.NaN })], GOALS, { problemId: 'p' });
    expect(plain).not.toContain('top replica %');
    expect(plain).not.toContain('kv in use');
    expect(plain).not.toContain('gpu batch');
  });

  it('never rounds a success rate up to a goal', () => {
    const t = formatTable([row({ success: 0.98996 })], GOALS, { problemId: 'p' });
    expect(t).toContain('98.99');
    expect(t).not.toContain('99.00');
    expect(formatTable([row({ success: 0.9912 })], GOALS, { problemId: 'p' })).toContain('99.12');
  });

  it('ends with a newline and says when there are no cases', () => {
    expect(text.endsWith('\n')).toBe(true);
    expect(formatTable([], GOALS, { problemId: 'p' })).toContain('(no cases)');
  });
});
