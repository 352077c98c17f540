import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { layoutConstants } from '../src/engine/layout.js';
import { ServesimError } from '../src/errors.js';
import type { RequestWorkload } from '../src/model/problem.js';
import { LIMITS } from '../src/problem/limits.js';
import { loadProblem, parseProblem, problemFromObject, selectCases } from '../src/problem/parse.js';
import { describeTraceSummary, traceSummary } from '../src/model/trace.js';
import { thrown } from './support.js';

const P_CACHE_CAP = layoutConstants()['P_CACHE_CAP']!;

const s = (x: number): number => x * 1_000_000;

const dir = mkdtempSync(join(tmpdir(), 'servesim-trace-problem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 100 requests, one every 500 ms: a span of 49.5 s, a mean rate of 100 / 49.5 a second. */
const REQUESTS = 100;
const SPAN_S = 49.5;
const TRACE = Array.from({ length: REQUESTS }, (_, i) =>
  JSON.stringify({ timestamp: i * 500, input_length: 600 + i, output_length: 20, hash_ids: [0, i % 7, i] }),
).join('\n');
mkdirSync(join(dir, 'traces'));
writeFileSync(join(dir, 'traces', 't.jsonl'), TRACE);
writeFileSync(join(dir, 'other.jsonl'), TRACE.split('\n').slice(0, 60).join('\n'));
writeFileSync(join(dir, 'traces', 'az.csv'), ['TIMESTAMP,ContextTokens,GeneratedTokens', ...Array.from({ length: 50 }, (_, i) => `2023-11-16 18:${String(i).padStart(2, '0')}:00.0000000,500,20`)].join('\n'));

/** A request problem replaying traces/t.jsonl (relative to `dir`), 2 s warm-up and 20 s measured. */
const BASE = {
  id: 'traced',
  goals: { success: 0.9, p99: '30s' },
  traffic: { trace: 'traces/t.jsonl', duration: '20s', warmup: '2s' } as Record<string, unknown>,
  workload: { kind: 'request' } as Record<string, unknown>,
  lb: {},
  app: { slots: 100, timeout: '60s' },
  router: { policy: 'prefix-affinity' },
  gpu: { replicas: 2, slots: 8 },
} as const;

type Raw = Record<string, unknown>;

/** The problem as a file in `dir` (or `at`), loaded from there. */
function load(raw: Raw, sets: readonly string[] = [], at = dir): ReturnType<typeof loadProblem> {
  const file = join(at, `p-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(raw));
  return loadProblem(file, sets);
}

function with_(traffic: Raw = {}, rest: Raw = {}): Raw {
  return { ...BASE, traffic: { ...BASE.traffic, ...traffic }, ...rest };
}

/** The issues (path: message) a call fails with. */
function issues(f: () => unknown): string[] {
  try {
    f();
  } catch (err) {
    if (!(err instanceof ServesimError)) throw err;
    const list = (err as ServesimError & { issues?: { path: string; message: string }[] }).issues;
    return list === undefined ? [err.message] : list.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected a ServesimError');
}

describe('a problem with traffic.trace', () => {
  it('parses: the typed trace, its mean rate, a bare request workload', () => {
    const p = load(with_());
    expect(p.traffic.trace?.requests).toBe(REQUESTS);
    expect(p.traffic.trace?.file).toBe('traces/t.jsonl');
    expect(p.traffic.trace?.format).toBe('mooncake');
    expect(p.traffic.rate).toBeCloseTo(REQUESTS / SPAN_S, 12);
    expect(p.traffic.rateScale).toBe(1);
    expect(p.traffic.duration).toBe(s(20));
    expect((p.workload as RequestWorkload).kind).toBe('request');
    expect(p.cases.map((c) => c.name)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
  });

  it('scales its rate by traffic.rateScale', () => {
    const p = load(with_({ rateScale: 0.5, duration: '10s' }));
    expect(p.traffic.rateScale).toBe(0.5);
    expect(p.traffic.rate).toBeCloseTo((REQUESTS / SPAN_S) * 0.5, 12);
  });

  it('reads an Azure trace too', () => {
    const p = load(with_({ trace: 'traces/az.csv', duration: '1800s', warmup: '0s' }, { cases: ['as-given'] }));
    expect(p.traffic.trace?.format).toBe('azure');
    expect(p.traffic.trace?.requests).toBe(50);
  });

  it('refuses traffic.rate with a trace, and traffic.rateScale without one', () => {
    expect(issues(() => load(with_({ rate: 5 })))).toEqual([expect.stringMatching(/^traffic\.rate: a trace sets the arrivals; traffic\.rateScale speeds it up/)]);
    const noTrace = { ...BASE, traffic: { rate: 5, duration: '20s', rateScale: 2 } };
    expect(issues(() => load(noTrace))).toEqual([expect.stringMatching(/^traffic\.rateScale: only means something with traffic\.trace/)]);
    const neither = { ...BASE, traffic: { duration: '20s' } };
    expect(issues(() => load(neither))).toEqual([expect.stringMatching(/^traffic\.rate: required/)]);
  });

  it("refuses the workload's fields: the trace gives each prompt and output", () => {
    const found = issues(() => load(with_({}, { workload: { kind: 'request', share: 0.5, prefixes: [{ tokens: 100 }], output: 10 } })));
    for (const field of ['share', 'prefixes', 'output']) {
      expect(found).toContainEqual(expect.stringMatching(new RegExp(`^workload\\.${field}: the trace gives each request's prompt and output`)));
    }
  });

  it('refuses task and job workloads, naming workload.kind', () => {
    expect(issues(() => load(with_({}, { workload: { kind: 'job' } })))).toContainEqual(expect.stringMatching(/^workload\.kind: a trace replays single model calls/));
    expect(issues(() => load(with_({}, { workload: { kind: 'task' } })))).toContainEqual(expect.stringMatching(/^workload\.kind: .*not task/));
  });

  it('refuses a burst case, naming its field', () => {
    const raw = with_({}, { cases: ['as-given', 'spike'], scenarios: { spike: { burst: { scale: 2 } } } });
    expect(issues(() => load(raw))).toEqual([expect.stringMatching(/^scenarios\.spike\.burst: a trace's arrivals have no Poisson rate to burst; use the case's rateScale/)]);
    // a case's rateScale replays it faster instead
    const faster = load(with_({}, { cases: ['as-given', 'spike'], scenarios: { spike: { rateScale: 2 } } }));
    expect(faster.cases[1]?.rateScale).toBe(2);
  });

  it("refuses a trace too short for the window of the cases that run, naming the span, the window, the speed and the cases", () => {
    // the problem loads: which cases run is known when they are picked
    const p = load(with_({ duration: '60s' }, { cases: ['as-given'] }));
    expect(issues(() => selectCases(p, 'all'))).toEqual([
      expect.stringMatching(/^traffic\.trace: traces\/t\.jsonl spans 49\.5s; case as-given replays it at 1x .*traffic\.warmup \+ traffic\.duration = 62s, needs 62s of it: shorten the window or lower the rateScale$/),
    ]);
    const err = thrown(() => selectCases(p, ['as-given']));
    expect(err.code).toBe('SERVESIM_PROBLEM_INVALID');
    // peak-hour replays 1.25x as fast: 40 s of window need 50 s of trace; the other cases fit
    const tight = load(with_({ duration: '38s' }));
    expect(selectCases(tight, ['as-given', 'slow-dependency']).map((c) => c.name)).toEqual(['as-given', 'slow-dependency']);
    expect(issues(() => selectCases(tight, 'all'))).toEqual([
      expect.stringMatching(/^traffic\.trace: .*spans 49\.5s; case peak-hour replays it at 1\.25x \(traffic\.rateScale 1 x case peak-hour's rateScale 1\.25\).* = 40s, needs 50s/),
    ]);
    // traffic.rateScale counts as well: 22 s at 2x need 44 s
    expect(() => selectCases(load(with_({ rateScale: 2 }, { cases: ['as-given'] })), 'all')).not.toThrow();
    expect(issues(() => selectCases(load(with_({ rateScale: 2.5 }, { cases: ['as-given'] })), 'all'))).toEqual([expect.stringMatching(/needs 55s of it/)]);
  });

  it('names every case short of trace in one message', () => {
    const p = load(with_({ duration: '60s' }, { cases: ['as-given', 'peak-hour', 'slow'], scenarios: { slow: { rateScale: 0.5 } } }));
    // at half speed 62 s of window need 31 s of trace: only the other two fall short
    expect(selectCases(p, ['slow']).map((c) => c.name)).toEqual(['slow']);
    expect(issues(() => selectCases(p, 'all'))).toEqual([
      'traffic.trace: traces/t.jsonl spans 49.5s; the window, traffic.warmup + traffic.duration = 62s, needs more of it in cases as-given, peak-hour: ' +
        "case as-given replays it at 1x (traffic.rateScale 1 x case as-given's rateScale 1), needing 62s; " +
        "case peak-hour replays it at 1.25x (traffic.rateScale 1 x case peak-hour's rateScale 1.25), needing 77.5s: shorten the window or lower the rateScale",
    ]);
  });

  it("holds the KV cache to the trace's requests: its smallest must fit; past the index's limit it is refused by name", () => {
    expect(issues(() => load(with_({}, { gpu: { replicas: 2, slots: 8, kvTokens: 619 } })))).toEqual([
      expect.stringMatching(/^gpu\.kvTokens: 619 tokens cannot hold the smallest request of traces\/t\.jsonl \(request 1, prompt \+ output\), 620 tokens/),
    ]);
    // 5,859 blocks + 8 slots + 2: past the engines' index, refused rather than cut
    expect(issues(() => load(with_({}, { gpu: { replicas: 2, slots: 8, kvTokens: 3_000_000 } })))).toEqual([
      expect.stringMatching(new RegExp(`^gpu\\.kvTokens: .* hold 5869 cache entries of a trace's block \\(512 tokens\\) with gpu\\.slots; the engines index at most ${LIMITS.cacheEntries} a replica`)),
    ]);
    // the largest that fits: an entry a block, every one of them indexed
    const fits = load(with_({}, { gpu: { replicas: 2, slots: 8, kvTokens: (LIMITS.cacheEntries - 10) * 512 } }));
    expect(compile(fits, fits.cases[0]!).params[P_CACHE_CAP]).toBe(LIMITS.cacheEntries);
  });

  it("reports a bad trace line as the problem's traffic.trace issue, with the problem's line", () => {
    writeFileSync(join(dir, 'traces', 'bad.jsonl'), `${TRACE.split('\n')[0]!}\n{"timestamp": 1, "input_length": 5, "output_length": -3, "hash_ids": []}\n`);
    const text = `id: bad\ngoals: { success: 0.9, p99: 30s }\ntraffic:\n  trace: traces/bad.jsonl\n  duration: 20s\nworkload: { kind: request }\nlb: {}\napp: { slots: 100, timeout: 60s }\nrouter: { policy: prefix-affinity }\ngpu: { replicas: 2, slots: 8 }\n`;
    expect(() => parseProblem(text, 'bad.yaml', [], { file: dir, set: dir })).toThrow(
      'bad.yaml: invalid problem: traffic.trace: traces/bad.jsonl line 2: output_length must be a whole number of at least 1 (got -3) (line 4)',
    );
  });
});

describe('where traffic.trace resolves', () => {
  it("from a problem file: the file's folder, whatever the working directory", () => {
    expect(resolve(dir)).not.toBe(process.cwd());
    expect(load(with_()).traffic.trace?.requests).toBe(REQUESTS);
    // the same path from a file in another folder names no file
    const elsewhere = mkdtempSync(join(tmpdir(), 'servesim-elsewhere-'));
    try {
      expect(issues(() => load(with_(), [], elsewhere))).toEqual([
        expect.stringMatching(/^traffic\.trace: cannot read trace file traces\/t\.jsonl: no such file \(line 1\)$/),
      ]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('from --set traffic.trace=FILE: the working directory', () => {
    const fromCwd = relative(process.cwd(), join(dir, 'other.jsonl'));
    const p = load(with_(), [`traffic.trace=${fromCwd}`]);
    expect(p.traffic.trace?.requests).toBe(60);
    expect(p.traffic.trace?.file).toBe(fromCwd);
    // relative to the problem file's folder it would exist; from the working directory it does not
    expect(issues(() => load(with_(), ['traffic.trace=traces/t.jsonl']))).toEqual([
      'traffic.trace: cannot read trace file traces/t.jsonl: no such file (from --set traffic.trace=traces/t.jsonl)',
    ]);
  });

  it('from an object (an HTTP body, a queue message): only a relative path inside problems/', () => {
    const raw = with_({ trace: join(dir, 'traces', 't.jsonl') });
    expect(issues(() => problemFromObject(raw))).toEqual([expect.stringMatching(/^traffic\.trace: must be a relative path inside servesim's problems\/ folder/)]);
    expect(issues(() => problemFromObject(with_({ trace: '../package.json.jsonl' })))).toEqual([expect.stringMatching(/^traffic\.trace: must be a relative path inside/)]);
    expect(issues(() => problemFromObject(with_({ trace: 'traces/../../x.jsonl' })))).toEqual([expect.stringMatching(/^traffic\.trace: must be a relative path inside/)]);
    expect(issues(() => problemFromObject(with_(), [`traffic.trace=${join(dir, 'other.jsonl')}`]))).toEqual([
      expect.stringMatching(/^traffic\.trace: must be a relative path inside .*\(from --set traffic\.trace=/),
    ]);
    expect(issues(() => problemFromObject(with_()))).toEqual([
      "traffic.trace: cannot read trace file traces/t.jsonl: no such file (a problem sent as an object names a trace inside servesim's problems/ folder)",
    ]);
    // a caller that read the object from a file of its own says where it resolves
    expect(problemFromObject(with_(), [], 'p.json', { file: dir, set: dir }).traffic.trace?.requests).toBe(REQUESTS);
  });
});

describe('the shipped Mooncake conversation trace', () => {
  it('parses from problems/: 12,031 requests, nearly all continuing an earlier prompt', () => {
    const p = problemFromObject(with_({ trace: 'traces/mooncake-conversation.jsonl', duration: '600s', warmup: '10s' }));
    const t = p.traffic.trace!;
    expect(t.requests).toBe(12_031);
    expect(t.format).toBe('mooncake');
    // nearly every request begins with blocks an earlier prompt began with
    let sharing = 0;
    for (let i = 0; i < t.requests; i++) if (t.reusable[i]! > 0) sharing++;
    expect(sharing / t.requests).toBeGreaterThan(0.9);
    // an hour: 3,537 s from the first request to the last
    expect(t.at[t.requests - 1]).toBe(3_536_999_000);
    expect(p.traffic.rate).toBeCloseTo(12_031 / 3_536.999, 9);
    // an infinite block cache finds 37.3% of prompt tokens (docs/model.md section 2)
    const summary = traceSummary(t);
    expect((100 * summary.blockCacheShare).toFixed(1)).toBe('37.3');
    expect(describeTraceSummary(summary)).toBe(
      'traces/mooncake-conversation.jsonl: 12,031 requests over 3,537 s (3.4/s), 12,035 input and 343 output tokens on average, 37.3% of prompt tokens found by an infinite block cache',
    );
  });
});
