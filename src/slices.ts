/**
 * Long work on the service's event loop, done in slices: a loop gives way (setImmediate) once
 * it has held the loop for {@link SLICE_MS}, so the requests that arrived meanwhile, /healthz
 * among them, are answered between its slices. A loop written as a generator (a bare `yield`
 * where it may pause) runs whole where nobody waits on the loop (the CLI), or in slices.
 */

/** How long one slice holds the event loop: well under what a client waiting for /healthz notices. */
export const SLICE_MS = 10;

/** Slices waiting for their turn, in order. */
const waiting: (() => void)[] = [];
let turning = false;

/** Resumes the slice whose turn it is: one a turn of the event loop, so I/O comes between any two. */
function turn(): void {
  const resume = waiting.shift()!;
  turning = waiting.length > 0;
  if (turning) setImmediate(turn);
  resume();
}

/**
 * Waits for a later turn of the event loop: the requests that arrived meanwhile are answered
 * first. Work that gives way resumes one slice a turn, in order, however many are waiting (each
 * resumed by its own setImmediate, the slices of three answers would run back to back).
 */
export function giveWay(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (turning) return;
    turning = true;
    setImmediate(turn);
  });
}

/** A loop's hold on the event loop: `pause` gives way once SLICE_MS have passed since it last did. */
export class Slice {
  private start = performance.now();

  async pause(): Promise<void> {
    if (performance.now() - this.start < SLICE_MS) return;
    await giveWay();
    this.start = performance.now();
  }
}

/** Runs `steps` to its end at once. */
export function runWhole<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs `steps` to its end, a slice at a time. */
export async function runInSlices<T>(steps: Generator<void, T>): Promise<T> {
  const slice = new Slice();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await slice.pause();
  }
}

/** `items.map(f)`, a slice at a time. */
export function mapInSlices<T, U>(items: readonly T[], f: (item: T) => U): Promise<U[]> {
  return runInSlices(
    (function* () {
      const out: U[] = [];
      for (const item of items) {
        out.push(f(item));
        yield;
      }
      return out;
    })(),
  );
}

/**
 * The pieces (bytes or text of an answer) made a slice at a time, each slice's pieces together;
 * the first slice too waits for its turn, so answers started at once take turns from the start.
 */
export async function* piecesInSlices<T>(pieces: Iterable<T>): AsyncGenerator<T[]> {
  const iterator = pieces[Symbol.iterator]();
  for (;;) {
    await giveWay();
    const slice: T[] = [];
    const start = performance.now();
    let step = iterator.next();
    for (; !step.done; step = iterator.next()) {
      slice.push(step.value);
      if (performance.now() - start >= SLICE_MS) break;
    }
    if (slice.length > 0) yield slice;
    if (step.done) return;
  }
}
