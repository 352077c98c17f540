/**
 * Progress on stderr while a run goes: a cli-progress bar on a terminal, a plain line every few
 * seconds in logs (written here rather than by cli-progress's noTTYOutput, whose first line has
 * no ETA yet and whose stop adds an empty line), and nothing for runs that end within a second.
 */
import { createRequire } from 'node:module';
import type cliProgress from 'cli-progress';
import type { Progress } from '../run/types.js';

// required by the first bar drawn: a log or a pipe never loads it
const require = createRequire(import.meta.url);

/** The stream the progress goes to: process.stderr, or a test double. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/** Receives the runner's progress; `stop()` must be called once the run ends. */
export interface ProgressReporter {
  readonly onProgress: (progress: Progress) => void;
  stop(): void;
}

export interface ProgressOptions {
  /** Shown before the bar (the problem id). */
  readonly label: string;
  /** How long a run must last before anything shows, ms (default 1000). */
  readonly delayMs?: number;
  /** Least interval between plain lines when the stream is not a terminal, ms (default 5000). */
  readonly logIntervalMs?: number;
  /** Clock, for tests. */
  readonly now?: () => number;
}

/** A reporter that draws on `stream` (see the module comment for when it draws). */
export function createProgressReporter(
  stream: ProgressStream,
  options: ProgressOptions,
): ProgressReporter {
  const now = options.now ?? Date.now;
  const started = now();
  const delay = options.delayMs ?? 1000;
  const draw = stream.isTTY === true ? barDrawer(stream, options.label) : lineDrawer(stream, options, now);
  let last: Progress | null = null;
  let shown = false;
  let stopped = false;

  const rate = (p: Progress): string =>
    compact(p.arrivalsDone / Math.max((now() - started) / 1000, 1e-3));

  return {
    onProgress(p: Progress): void {
      if (stopped) return;
      last = p;
      // a short run would only flash a bar: show up once it has lasted `delay`
      if (!shown && now() - started < delay) return;
      shown = true;
      draw.update(p, rate(p), now() - started);
    },
    stop(): void {
      if (stopped) return;
      stopped = true;
      if (shown && last !== null) draw.finish(last, rate(last), now() - started);
    },
  };
}

interface Drawer {
  update(p: Progress, rate: string, elapsedMs: number): void;
  finish(p: Progress, rate: string, elapsedMs: number): void;
}

/** A terminal: cli-progress's bar, redrawn in place and cleared at the end. */
function barDrawer(stream: ProgressStream, label: string): Drawer {
  let bar: cliProgress.SingleBar | null = null;
  return {
    update(p, rate) {
      if (bar === null) {
        const { SingleBar, Presets } = require('cli-progress') as typeof cliProgress;
        bar = new SingleBar(
          {
            stream,
            format:
              '{label} {bar} {percentage}% | {value}/{total} instances | {rate} arrivals/s | ETA {eta_formatted}',
            hideCursor: true,
            clearOnComplete: true,
            // Ctrl-C is ours to handle: the command stops the bar on abort
            gracefulExit: false,
            etaBuffer: 50,
          },
          Presets.shades_classic,
        );
        bar.start(p.instancesTotal, p.instancesDone, { label, rate });
        return;
      }
      bar.setTotal(p.instancesTotal);
      bar.update(p.instancesDone, { label, rate });
    },
    finish() {
      bar?.stop();
    },
  };
}

/** Logs: a plain line now and then (cli-progress's noTTYOutput style), and a last one. */
function lineDrawer(stream: ProgressStream, options: ProgressOptions, now: () => number): Drawer {
  const every = options.logIntervalMs ?? 5000;
  let lastLine = Number.NEGATIVE_INFINITY;
  let lastDone = -1;
  const write = (p: Progress, rate: string, elapsedMs: number): void => {
    const pct = p.instancesTotal > 0 ? Math.floor((100 * p.instancesDone) / p.instancesTotal) : 0;
    const eta =
      p.instancesDone > 0 && p.instancesDone < p.instancesTotal
        ? ` | ETA ${duration((elapsedMs * (p.instancesTotal - p.instancesDone)) / p.instancesDone)}`
        : '';
    stream.write(
      `${options.label} ${p.instancesDone}/${p.instancesTotal} instances (${pct}%) | ${rate} arrivals/s${eta}\n`,
    );
    lastLine = now();
    lastDone = p.instancesDone;
  };
  return {
    update(p, rate, elapsedMs) {
      if (now() - lastLine >= every) write(p, rate, elapsedMs);
    },
    finish(p, rate, elapsedMs) {
      if (p.instancesDone !== lastDone) write(p, rate, elapsedMs);
    },
  };
}

/** What the time left of a sweep is read from. */
export interface PointsPace {
  readonly pointsDone: number;
  readonly instancesDone: number;
  readonly instancesTotal: number;
}

/**
 * A sweep's time left, at the pace it has kept since its first grid point finished: the time
 * before that (threads starting, a kernel compiling, the first points' seeds in flight) says
 * little of the rest, and spread over the whole sweep it made the first estimate of a 30 s
 * sweep five minutes.
 */
export class TimeLeft {
  private since: { readonly at: number; readonly instances: number } | null = null;

  constructor(private readonly now: () => number) {}

  /** Takes every progress report, drawn or not: the pace starts at the first with a point done. */
  observe(p: PointsPace): void {
    if (this.since === null && p.pointsDone > 0) this.since = { at: this.now(), instances: p.instancesDone };
  }

  /** Milliseconds left; null until a point has finished and instances have run since. */
  ms(p: PointsPace): number | null {
    if (this.since === null) return null;
    const ran = p.instancesDone - this.since.instances;
    const elapsed = this.now() - this.since.at;
    return ran > 0 && elapsed > 0 ? (elapsed * Math.max(0, p.instancesTotal - p.instancesDone)) / ran : null;
  }
}

/** 75_000 ms -> "1m15s". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** 1234567 -> "1.23M": a rate reads at a glance. */
export function compact(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const units: readonly [number, string][] = [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [size, unit] of units) {
    if (value >= size) return `${(value / size).toPrecision(3)}${unit}`;
  }
  return String(Math.round(value));
}
