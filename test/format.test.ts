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
    passes: true,
    kv_hit_rate: 0.8512,
    gpu_utilization: 0.734,
    mean_batch: 12.34,
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
  passes: false,
  pass_probability: 0,
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
    seeds: 64,
    baseSeed: 1,
    servesimVersion: '0.1.0',
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
    expect(at('case')).toBe('server-dies');
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
  const text = formatTable(RESULT.rows, GOALS, {
    ...RESULT.meta,
    title: 'Hot prefix',
    confidence: 0.9,
  });
  const lines = text.split('\n');

  it('names the problem, engine and goals', () => {
    expect(lines[0]).toBe('hot-prefix — Hot prefix');
    expect(lines[1]).toContain('engine: pool');
    expect(lines[1]).toContain('64 seeds from 1');
    expect(lines[1]).toContain('success ≥ 99%');
    expect(lines[1]).toContain('p99 ≤ 2 s');
    expect(lines[1]).toContain('pass prob ≥ 0.9');
  });

  it('has one aligned row per case with PASS/FAIL', () => {
    const header = lines.find((l) => l.startsWith('case'))!;
    const body = lines.filter((l) => l.startsWith('as-given') || l.startsWith('server-dies'));
    expect(body).toHaveLength(2);
    expect(body[0]).toMatch(/ PASS /);
    expect(body[1]).toMatch(/ FAIL /);
    const col = header.indexOf('result');
    for (const l of body) expect(l.slice(col, col + 4)).toMatch(/PASS|FAIL/);
    // right-aligned numbers end under their titles
    const end = header.indexOf('p99 s') + 'p99 s'.length;
    expect(body[0]!.slice(0, end).endsWith('1.875')).toBe(true);
    expect(body[1]!.slice(0, end).endsWith('–')).toBe(true);
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
