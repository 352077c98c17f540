/**
 * `npm run bench -- --only mm8`: issue 30's `servesim run` of M/M/8 (lambda 24/s, mu 4/s,
 * 300 s, 400 seeds, `--engine cpu`) as a whole process on one core, beside the reference
 * engine alone on the same instances, as simulated requests per second of each (the same
 * requests: the process runs instances 0..399 of base seed 1, as the engine does here).
 *
 * The process is pinned to one core with `taskset -c 0` (Linux), so the pool sizes itself to
 * one thread; without taskset the section says so and runs nothing. Asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runReference } from '../src/engine/reference.js';
import { configOf, work } from './measure.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BIN = 'dist/src/cli/main.js';
const SETS = ['server.slots=8', 'traffic.rate=24', 'server.service={dist: exponential, mean: 250ms}', 'traffic.duration=300s'];
const SEEDS = 400;
/** Startup timings, of which the median is given. */
const STARTS = 5;

export interface WholeRunRow {
  readonly requests: number;
  /** The process, start-up and exit included. */
  readonly processSeconds: number;
  /** The engine in this thread: its first round (a fresh JIT when this section runs alone), and the best of two more. */
  readonly firstRoundSeconds: number;
  readonly steadySeconds: number;
  readonly engineEvents: number;
  /** plainMm8 on as many instances, after a round to warm its JIT. */
  readonly plainSeconds: number;
  readonly plainEvents: number;
  /** `servesim --version` and `node -e 0`, the median of STARTS each. */
  readonly versionSeconds: number;
  readonly nodeSeconds: number;
  readonly loadAverage: number;
}

/**
 * The textbook M/M/8 the engine's events are weighed against: one binary heap of arrivals and
 * service ends (times in doubles), a FIFO of waiting arrivals, exponential draws from an
 * xorshift generator, a count of waits; none of the engine's counters, histograms, deadlines,
 * u32 clock or per-instance state. Returns the events it handled.
 */
function plainMm8(instances: number): number {
  const horizon = 320; // warm-up and window, seconds, as the problem's
  const heapTime = new Float64Array(1 << 16);
  const heapKind = new Uint8Array(1 << 16);
  const fifo = new Float64Array(1 << 16);
  let events = 0;
  let x = 0x9e3779b9;
  const exp = (mean: number): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return -mean * Math.log(((x >>> 0) + 1) / 4294967297);
  };
  for (let i = 0; i < instances; i++) {
    let n = 0;
    let head = 0;
    let tail = 0;
    let busy = 0;
    let waited = 0;
    const push = (t: number, kind: number): void => {
      let at = n++;
      while (at > 0 && heapTime[(at - 1) >> 1]! > t) {
        heapTime[at] = heapTime[(at - 1) >> 1]!;
        heapKind[at] = heapKind[(at - 1) >> 1]!;
        at = (at - 1) >> 1;
      }
      heapTime[at] = t;
      heapKind[at] = kind;
    };
    push(exp(1 / 24), 0);
    while (n > 0) {
      const now = heapTime[0]!;
      const kind = heapKind[0]!;
      const t = heapTime[--n]!;
      const k = heapKind[n]!;
      let at = 0;
      for (;;) {
        let c = 2 * at + 1;
        if (c >= n) break;
        if (c + 1 < n && heapTime[c + 1]! < heapTime[c]!) c++;
        if (heapTime[c]! >= t) break;
        heapTime[at] = heapTime[c]!;
        heapKind[at] = heapKind[c]!;
        at = c;
      }
      heapTime[at] = t;
      heapKind[at] = k;
      events++;
      if (kind === 0) {
        const next = now + exp(1 / 24);
        if (next < horizon) push(next, 0);
        if (busy < 8) {
          busy++;
          push(now + exp(0.25), 1);
        } else fifo[tail++ & 0xffff] = now;
      } else if (head !== tail) {
        waited += now - fifo[head++ & 0xffff]! > 0 ? 1 : 0;
        push(now + exp(0.25), 1);
      } else busy--;
    }
    if (waited < 0) throw new Error('unreachable: keeps the count live');
  }
  return events;
}

/** Seconds a pinned process takes, or the reason it could not run. */
function timed(args: readonly string[]): { seconds: number; stderr: string } | string {
  const t0 = performance.now();
  const r = spawnSync('taskset', ['-c', '0', process.execPath, ...args], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
  const seconds = (performance.now() - t0) / 1000;
  if (r.error !== undefined) return `taskset -c 0 ${args.join(' ')}: ${r.error.message}`;
  if (r.status !== 0) return `taskset -c 0 node ${args.join(' ')} exited ${r.status}: ${r.stderr}`;
  return { seconds, stderr: r.stderr };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function starts(args: readonly string[]): number | string {
  const seconds: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const r = timed(args);
    if (typeof r === 'string') return r;
    seconds.push(r.seconds);
  }
  return median(seconds);
}

export function wholeRun(): { text: string; row: WholeRunRow | null } {
  const command = ['run', 'mmc', ...SETS.flatMap((s) => ['--set', s]), '--seeds', String(SEEDS), '--engine', 'cpu'];
  const heading = '## `servesim run` of M/M/8 on one core, whole, beside the engine\n\n' +
    `Command: \`taskset -c 0 node ${BIN} ${command.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}\``;
  const nodeSeconds = starts(['-e', '0']);
  const versionSeconds = starts([BIN, '--version']);
  const whole = timed([BIN, ...command]);
  if (typeof nodeSeconds === 'string' || typeof versionSeconds === 'string' || typeof whole === 'string') {
    return { text: `${heading}\n\nNot run: ${[nodeSeconds, versionSeconds, whole].find((r) => typeof r === 'string') as string}`, row: null };
  }
  const { seconds: processSeconds, stderr } = whole;
  const config = configOf('mmc', SETS);
  const round = (): { seconds: number; records: Uint32Array } => {
    const t0 = performance.now();
    const records = runReference(config, 1, 0, SEEDS);
    return { seconds: (performance.now() - t0) / 1000, records };
  };
  const first = round();
  const steadySeconds = Math.min(round().seconds, round().seconds);
  const { arrivals: requests, events } = work(config, first.records);
  plainMm8(SEEDS); // its JIT warmed, as the engine's steady rounds are
  const t0 = performance.now();
  const plainEvents = plainMm8(SEEDS);
  const plainSeconds = (performance.now() - t0) / 1000;
  const row: WholeRunRow = {
    requests, processSeconds, firstRoundSeconds: first.seconds, steadySeconds, engineEvents: events, plainSeconds, plainEvents,
    versionSeconds, nodeSeconds, loadAverage: loadavg()[0]!,
  };
  const rate = (s: number): string => `${((requests / s) / 1e6).toFixed(2)}M requests/s`;
  const engine = /engine: (.*)/.exec(stderr)?.[1] ?? 'unknown';
  const lines = [
    `- ${Math.round(requests).toLocaleString('en')} simulated requests (arrivals, warm-up included); the process ran on ${engine}.`,
    `- The whole process: ${processSeconds.toFixed(2)} s, ${rate(processSeconds)}.`,
    `- The engine alone in one thread, first round: ${first.seconds.toFixed(2)} s, ${rate(first.seconds)}; steady (best of two more): ${steadySeconds.toFixed(2)} s, ${rate(steadySeconds)}.`,
    `- Whole process / steady engine (requests/s): ${(steadySeconds / processSeconds).toFixed(2)}; first round / steady: ${(steadySeconds / first.seconds).toFixed(2)}.`,
    `- Per event: the engine ${((steadySeconds / events) * 1e9).toFixed(0)} ns (${Math.round(events).toLocaleString('en')} events), a plain M/M/8 event loop (plainMm8) ${((plainSeconds / plainEvents) * 1e9).toFixed(0)} ns (${plainEvents.toLocaleString('en')} events): ${((steadySeconds / events) / (plainSeconds / plainEvents)).toFixed(1)}x.`,
    `- Start-up, medians of ${STARTS}: \`node -e 0\` ${nodeSeconds.toFixed(2)} s, \`servesim --version\` ${versionSeconds.toFixed(2)} s.`,
    `- Load average (1 min) as it ended: ${row.loadAverage.toFixed(2)}; the timings are wall-clock, so a loaded machine stretches them.`,
  ];
  return { text: `${heading}\n\n${lines.join('\n')}`, row };
}
