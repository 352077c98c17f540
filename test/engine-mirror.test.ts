/**
 * The two engines are one program in two languages: kernels/simulate.wgsl is
 * src/engine/simulate.ts in WGSL, function for function, in the same order under the same
 * section banners (`// ---- title ---`), so that a reader can hold them side by side and a
 * change made to one shows where it is missing from the other. gpu-equivalence.test.ts
 * compares what they compute; this test compares their shape, from the text alone: the
 * sections, the functions in each and their order, each function's parameter count and the
 * functions it calls, and that each section calls only its own and earlier ones (so either
 * file reads from the top: WGSL allows no recursion, and event handlers are reached from the
 * event loop's switch, near the end).
 *
 * Where the engines differ on purpose, a list below names the function and says why, and a
 * name in a list that no longer fits the files fails the test. simulate.ts also reads the
 * clock (`now`) and the heap's length from module variables where the kernel reads the state,
 * and tells an optional request recorder (`recorder.x(...)`, a method, for --requests-out) of
 * counted calls and arrivals: neither is a reshaping, and neither is listed (simulate.ts's
 * header says why).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** Functions simulate.ts has and the kernel has not. */
const TS_ONLY: Record<string, string> = {
  sumsLoad: 'loads the two-word result counters into doubles while advanceInstance runs, so that add64 adds with no carry',
  sumsStore: 'stores those doubles back into their two words before advanceInstance returns',
  heapSiftUp: "the sift up that heapPush and fifoFlush share; the kernel's heapPush, the only one that inserts, has it inline",
  fifoPush: 'queues an event due P.TIMEOUT after now (a deadline) in a FIFO beside the heap, with no sift: such events come in order',
  fifoPop: "takes the FIFO's head when it comes before the heap's top",
  fifoFlush: 'moves the FIFO into the heap before init and advance return, so that the state between calls is the kernel\'s',
  unbind: 'copies the instance back from the arrays of its own it ran in (bind copied it in); the kernel runs in the state buffer',
  recordRequests: "sets the recorder (--requests-out) that the reference engine tells of each counted call and arrival; the kernel records none",
};

/** Functions the kernel has and simulate.ts has not: where a GPU batch differs from one instance at a time. */
const WGSL_ONLY: Record<string, string> = {
  ix: "where word i of the instance's record lies in the batch's state buffer (interleaved or not); simulate.ts indexes its own array",
  param: "word i of the instance's configuration among the params of the whole batch; simulate.ts reads its own copy, pr[i]",
  failsAt: "whether a failure of the batch's shape (a pipeline constant) targets tgt, so that the compiler leaves out handlers none reaches",
};

const BASES = 'reads where its records start from module variables that bind sets, where the kernel reads params at each call';
const ENTRY_WALK = "walks the entries' word addresses, a stride each, where the kernel calls entryAt for each entry";
const BATCH_WALK = "reads the batch's size once and walks the running list from its address, where the kernel calls runningAt for each";

/**
 * Shared functions whose body simulate.ts has reshaped for V8 (issue 14,
 * bench/results/reference-speed.md): same name, place and job, another body. These alone may
 * differ in their parameter count or in the functions they call.
 */
const TUNED_FOR_V8: Record<string, string> = {
  count: "adds in place rather than through result(), to stay within the size of function V8 inlines wherever it is called",
  add64: 'adds to a double (sumsLoad, sumsStore), exact to 2^53, where the kernel carries between two words',
  mulAdd64: 'adds one product to a double, where the kernel adds 16-bit pieces through add64',
  measured: 'reads the window from module variables and compares, where Math.max and Math.min would be float64 operations',
  later: 'compares the product with the room left, with no division',
  random: "draws with the instance's key held as an i32 in a module variable, which V8 never boxes",
  sample: 'passes u as an i32: V8 boxes a u32 argument past 2^31',
  heapPush: 'sends events due P.TIMEOUT after now to the FIFO (fifoPush) and sifts up through heapSiftUp',
  heapPop: "takes the FIFO's head when it comes first (fifoPop) and walks word addresses, the last entry's time and sequence in locals",
  queuePush: "reads the queue's tail and length once, into locals",
  appAt: BASES,
  serverAt: BASES,
  replicaAt: BASES,
  entryAt: BASES,
  cacheFind: ENTRY_WALK,
  cacheFree: ENTRY_WALK,
  cacheDeepest: ENTRY_WALK,
  cacheVictim: ENTRY_WALK,
  replicaRelease: BATCH_WALK,
  replicaBoundary: BATCH_WALK,
  replicaPlan: 'compares where Math.min would be a float64 operation (the one schedule after its branch is the kernel\'s reshaping)',
  routeScan: '(from + i) % n by a comparison, as both are below n: a division takes tens of cycles',
  arrival: 'reads the measured window from module variables',
  nextEvent: "compares the FIFO's head with the heap's top and the next arrival",
  stopInstance: 'empties the FIFO too',
  advanceInstance: 'holds hot state words and the two-word counters in module variables, counts events in a local, calls arrival without handleEvent\'s switch, flushes the FIFO',
  initInstance: "sets the module variables and flushes the FIFO (and zeroes the state, which the kernel's host does)",
  bind: "copies the params, and for advance the state (copyState: one parameter more), into arrays of its own whose address and length V8 compiles into the code; the kernel's bind says where its configuration's params and state start",
};

interface EngineFunction {
  readonly name: string;
  /** The banner's title above it; '' before the first banner. */
  readonly section: string;
  readonly params: number;
  /** The body, comments left out. */
  readonly body: string;
}

interface Engine {
  readonly file: string;
  readonly sections: readonly string[];
  readonly functions: readonly EngineFunction[];
}

const BANNER = /^\/\/ ---- (.+?) -+$/;

/**
 * The top-level functions of an engine's file, by its text: a function starts at a line that
 * `signature` matches (name, parameters) and ends at a line that is `}` alone.
 */
function parseEngine(file: string, signature: RegExp, keyword: RegExp): Engine {
  const lines = readFileSync(new URL(`../${file}`, import.meta.url), 'utf8').split('\n');
  const sections: string[] = [];
  const functions: EngineFunction[] = [];
  let open: { name: string; section: string; params: number; body: string[] } | null = null;
  const close = () => {
    if (open) functions.push({ ...open, body: open.body.join('\n') });
    open = null;
  };
  for (const [i, line] of lines.entries()) {
    const banner = BANNER.exec(line);
    const fn = signature.exec(line);
    if (banner) {
      close();
      sections.push(banner[1]!);
    } else if (fn) {
      close();
      const params = fn[2]!.split(',').filter((p) => p.trim() !== '').length;
      open = { name: fn[1]!, section: sections.at(-1) ?? '', params, body: [] };
    } else if (keyword.test(line)) {
      throw new Error(`${file}:${i + 1}: a function this test cannot read: ${line}`);
    } else if (line === '}') {
      close();
    } else if (open) {
      open.body.push(line.replace(/\/\/.*$/, ''));
    }
  }
  close();
  return { file, sections, functions };
}

const ts = parseEngine('src/engine/simulate.ts', /^(?:export )?function (\w+)\(([^)]*)\)/, /^(?:export )?(?:async )?function\b/);
const wgsl = parseEngine('kernels/simulate.wgsl', /^fn (\w+)\(([^)]*)\)/, /^fn\b/);

function names(engine: Engine): Set<string> {
  return new Set(engine.functions.map((f) => f.name));
}

function byName(engine: Engine, name: string): EngineFunction {
  return engine.functions.find((f) => f.name === name)!;
}

/** The functions of `among` that f's body calls (a method, `x.f(`, is not one). */
function callees(f: EngineFunction, among: ReadonlySet<string>): string[] {
  const called = [...f.body.matchAll(/(?<![\w.])(\w+)\(/g)].map((m) => m[1]!);
  return [...new Set(called)].filter((name) => among.has(name) && name !== f.name).sort();
}

const shared = new Set([...names(ts)].filter((name) => names(wgsl).has(name)));
const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('the engines mirror each other: src/engine/simulate.ts and kernels/simulate.wgsl', () => {
  it('read as engines: more than 100 functions each, each (but the kernel\'s helpers above the first banner) in a section', () => {
    for (const engine of [ts, wgsl]) {
      expect(engine.functions.length, engine.file).toBeGreaterThan(100);
      const unsectioned = engine.functions.filter((f) => f.section === '').map((f) => f.name);
      expect(unsectioned, engine.file).toEqual(engine === wgsl ? ['ix', 'param', 'failsAt'] : []);
    }
  });

  it('have the same section banners, in the same order', () => {
    expect(wgsl.sections).toEqual(ts.sections);
  });

  it('have the same functions, but for those listed as one side\'s only', () => {
    expect(sorted([...names(ts)].filter((n) => !shared.has(n))), 'in simulate.ts alone (TS_ONLY)').toEqual(sorted(Object.keys(TS_ONLY)));
    expect(sorted([...names(wgsl)].filter((n) => !shared.has(n))), 'in simulate.wgsl alone (WGSL_ONLY)').toEqual(sorted(Object.keys(WGSL_ONLY)));
  });

  it('have their shared functions in the same order, each under the same banner', () => {
    const order = (engine: Engine) => engine.functions.filter((f) => shared.has(f.name)).map((f) => `${f.section}: ${f.name}`);
    expect(order(wgsl)).toEqual(order(ts));
  });

  it('give each shared function as many parameters on both sides, but where tuned for V8', () => {
    const differ = [...shared].filter((name) => byName(ts, name).params !== byName(wgsl, name).params);
    expect(differ.filter((name) => !(name in TUNED_FOR_V8)), 'parameter counts differ (TUNED_FOR_V8 says why if they must)').toEqual([]);
  });

  it('have each shared function call the same functions on both sides, but where tuned for V8', () => {
    const differ = [...shared].filter((name) => !(name in TUNED_FOR_V8)).flatMap((name) => {
      const [a, b] = [callees(byName(ts, name), shared), callees(byName(wgsl, name), shared)];
      return a.join() === b.join() ? [] : [`${name}: simulate.ts calls ${a.join(', ')}; simulate.wgsl ${b.join(', ')}`];
    });
    expect(differ).toEqual([]);
  });

  it('call from each section only its own functions and earlier sections\'', () => {
    const forward = [ts, wgsl].flatMap((engine) => {
      const all = names(engine);
      const rank = (section: string) => engine.sections.indexOf(section);
      return engine.functions.flatMap((f) =>
        callees(f, all)
          .map((name) => byName(engine, name))
          .filter((callee) => rank(callee.section) > rank(f.section))
          .map((callee) => `${engine.file}: ${f.name} (${f.section}) calls ${callee.name} (${callee.section})`),
      );
    });
    expect(forward).toEqual([]);
  });

  it('list as tuned for V8 only functions both sides have', () => {
    expect(Object.keys(TUNED_FOR_V8).filter((name) => !shared.has(name))).toEqual([]);
  });
});
