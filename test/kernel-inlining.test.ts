/**
 * WGSL has no calls at run time: every compiler the kernel meets (Mesa's through Dawn, a GPU
 * driver's) inlines each function at each call site, so a large function reached along five
 * paths is compiled five times. That is how the kernel once grew to ~51,500 statements inlined
 * and llvmpipe took 7 minutes a shape (414 s for hot-prefix's: `npm run bench:compile` at 2df876c), past
 * what CI's GPU suite can spend on the shapes it compiles. This test reads the kernel's text,
 * counts the statements of each entry point with every call inlined (no shape's constants
 * applied: an upper bound), and holds the total under a budget, naming the functions compiled
 * most often when it is not; and it holds the one rule that cut it to ~21,300: the iteration
 * boundary (admission, finishing calls, planning) is reached from the event loop alone.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// About 20% above the kernel as it is (~21,300): room for a feature's own code, not for
// another large function copied along several paths.
const BUDGET = 26_000;

interface Kernel {
  readonly own: ReadonlyMap<string, number>;
  readonly calls: ReadonlyMap<string, readonly string[]>;
  readonly entries: readonly string[];
}

function readKernel(): Kernel {
  const text = ['rng', 'simulate', 'entry']
    .map((f) => readFileSync(new URL(`../kernels/${f}.wgsl`, import.meta.url), 'utf8'))
    .join('\n')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  const bodies = new Map<string, string>();
  for (const m of text.matchAll(/\bfn\s+(\w+)\s*\(/g)) {
    const open = text.indexOf('{', m.index + m[0].length);
    let depth = 0;
    let end = open;
    for (; end < text.length; end++) {
      if (text[end] === '{') depth++;
      else if (text[end] === '}' && --depth === 0) break;
    }
    bodies.set(m[1]!, text.slice(open, end + 1));
  }
  const own = new Map([...bodies].map(([name, body]) => [name, body.split(';').length]));
  const calls = new Map([...bodies].map(([name, body]) => [name, [...body.matchAll(/\b(\w+)\s*\(/g)].map((c) => c[1]!).filter((c) => bodies.has(c))]));
  const entries = [...text.matchAll(/@compute[^\n]*\n\s*fn\s+(\w+)/g)].map((m) => m[1]!);
  return { own, calls, entries };
}

/** How many times each function is compiled: once per path from an entry point. */
function copies(kernel: Kernel): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (name: string, times: number): void => {
    out.set(name, (out.get(name) ?? 0) + times);
    for (const callee of kernel.calls.get(name)!) walk(callee, times);
  };
  for (const entry of kernel.entries) walk(entry, 1);
  return out;
}

describe('the kernel, every call inlined', () => {
  const kernel = readKernel();
  const compiled = copies(kernel);

  it('reads the three entry points and the functions they reach', () => {
    expect(kernel.entries).toEqual(['initInstances', 'advanceInstances', 'gatherResults']);
    expect(compiled.get('replicaBoundary')).toBeGreaterThan(0);
  });

  it(`stays under ${BUDGET.toLocaleString('en-US')} statements, naming what is compiled most when not`, () => {
    const statements = [...compiled].reduce((sum, [name, times]) => sum + times * kernel.own.get(name)!, 0);
    const heaviest = [...compiled]
      .map(([name, times]) => ({ name, times, statements: times * kernel.own.get(name)! }))
      .sort((a, b) => b.statements - a.statements)
      .slice(0, 8)
      .map((f) => `${f.name} x${f.times} (${f.statements})`);
    expect(statements, `inlined statements; compiled most: ${heaviest.join(', ')}`).toBeLessThan(BUDGET);
  });

  it('reaches the iteration boundary from the event loop alone (an idle replica starts as an event)', () => {
    const callers = [...kernel.calls].filter(([, callees]) => callees.includes('replicaBoundary')).map(([name]) => name);
    expect(callers).toEqual(['handleEvent']);
    expect(compiled.get('replicaBoundary')).toBe(1);
  });
});
