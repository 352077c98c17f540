/**
 * The README and docs/ held to the code: docs/README.md indexes every page, every file the
 * pages name exists, the README fits its budget with the commands a newcomer runs on its first
 * screen and an example of every CLI command, and docs/limits.md states the limits the code
 * enforces (docs/testing.md, "The docs").
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_MEASURED_BYTES } from '../src/cli/compare-command.js';
import { MAX_RESULTS_BYTES } from '../src/cli/report-command.js';
import { buildProgram, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { MAX_LISTED_ISSUES } from '../src/errors.js';
import { MAX_DESIGNS, MAX_SCALE, MIN_SCALE } from '../src/capacity/api.js';
import { MAX_COST_LENGTH } from '../src/hint/cost.js';
import { DEFAULT_MAX_SEEDS } from '../src/model/verdict.js';
import { INPUT_LIMITS } from '../src/problem/bounds.js';
import { DEFAULT_LIMITS } from '../src/service/context.js';
import { DEFAULT_MAX_INSTANCES, MAX_SEED_ROWS, MAX_SEEDS } from '../src/sweep/limits.js';

const PAGES = readdirSync('docs').filter((f) => f.endsWith('.md')).map((f) => join('docs', f));
const DOCUMENTS = ['README.md', ...PAGES];
const read = (file: string): string => readFileSync(file, 'utf8');
const count = (n: number): string => n.toLocaleString('en');

/**
 * The repository files a page names: relative link targets, and paths in the repository's
 * top folders written out (`src/...`, `bench/results/...`); not globs (`kernels/*.wgsl`).
 */
function namedFiles(file: string): string[] {
  const text = read(file);
  const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => normalize(join(dirname(file), target)));
  return [...links, ...repoPaths(text)];
}

/** Paths written out in `text` that start at a top folder of the repository, globs left out. */
function repoPaths(text: string): string[] {
  return [...text.matchAll(/(?<![\w./-])(?:src|test|bench|docs|problems|sweeps|kernels|\.ci)\/[\w./*<>-]*/g)]
    .map((m) => m[0].replace(/[.]+$/, ''))
    .filter((path) => !/[*<>]/.test(path));
}

describe('docs/', () => {
  it('docs/README.md indexes every page', () => {
    const index = read('docs/README.md');
    const pages = PAGES.map((p) => p.slice('docs/'.length)).filter((p) => p !== 'README.md');
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.filter((p) => !index.includes(`](${p})`))).toEqual([]);
  });

  it.each(DOCUMENTS)('every file %s names exists', (file) => {
    const named = namedFiles(file);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((path) => !existsSync(path))).toEqual([]);
  });

  it('finds links and paths, and leaves out globs and URLs', () => {
    const page = 'docs/README.md';
    expect(namedFiles(page)).toContain('CONTRIBUTING.md');
    const text = 'see [x](cli.md#run), [y](https://example.org/a), `src/model/summary.ts`, kernels/*.wgsl and test/gpu-*.test.ts.';
    const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]);
    expect(links).toEqual(['cli.md', 'https://example.org/a']);
    expect(repoPaths(text)).toEqual(['src/model/summary.ts']);
  });
});

describe('README.md', () => {
  const readme = read('README.md');

  it('is under 180 lines, with the commands after a clone on its first screen', () => {
    const lines = readme.split('\n');
    expect(lines.length).toBeLessThan(180);
    const screen = lines.slice(0, 30);
    expect(screen.some((l) => l.startsWith('npm install && npm start '))).toBe(true);
    expect(screen.some((l) => l.startsWith('npm test '))).toBe(true);
  });

  it('shows an example of every command of the CLI', () => {
    const io = { stdout: { write: () => true }, stderr: { write: () => true } } as unknown as SweepIo;
    const names = buildProgram({} as ProgramDeps, io, () => undefined).commands.map((c) => c.name());
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((name) => !readme.includes(`npx servesim ${name} `))).toEqual([]);
  });
});

describe('docs/limits.md', () => {
  const rows = new Map(
    read('docs/limits.md')
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| ---'))
      .map((l) => l.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, '')))
      .map((cells) => [cells[0]!, cells[1]!] as const),
  );
  const value = (limit: string): string => {
    const found = [...rows.keys()].filter((k) => k.startsWith(limit));
    expect(found, limit).toHaveLength(1);
    return rows.get(found[0]!)!;
  };

  it('states the limits the code enforces', () => {
    expect(value('problem, sweep or hint file; HTTP body')).toBe(`${INPUT_LIMITS.bytes / 1024 ** 2} MiB`);
    expect(value('keys and values in a document')).toBe(count(INPUT_LIMITS.nodes));
    expect(value('nesting depth; YAML alias expansions')).toBe(`${INPUT_LIMITS.depth} levels; ${INPUT_LIMITS.aliases}`);
    expect(value('results file')).toBe(`${MAX_RESULTS_BYTES / 1024 ** 3} GiB`);
    expect(value('measured result')).toBe(`${MAX_MEASURED_BYTES / 1024 ** 2} MiB`);
    expect(value('issues listed in one error')).toBe(String(MAX_LISTED_ISSUES));
    expect(value('seeds per case and grid point')).toBe(count(MAX_SEEDS));
    expect(value('seeds an undecided configuration takes')).toBe(`${count(DEFAULT_MAX_SEEDS)} by default, at most ${count(MAX_SEEDS)}`);
    expect(value('grid points: CLI sweep and hint; HTTP')).toMatch(new RegExp(`; ${count(DEFAULT_LIMITS.maxGridPoints)}$`));
    expect(value('instances')).toBe(`${count(DEFAULT_MAX_INSTANCES)} (\`--max-instances\`); ${count(DEFAULT_LIMITS.syncMaxInstances)}`);
    expect(value('per-seed rows')).toBe(`${count(MAX_SEED_ROWS)}; ${count(DEFAULT_LIMITS.syncMaxInstances)} (the waited-for limit)`);
    expect(value('hint instances asked at once')).toBe(`${count(DEFAULT_LIMITS.syncMaxInstances)} (the waited-for limit)`);
    expect(value('designs of a capacity search')).toBe(`${count(MAX_DESIGNS)}; ${MIN_SCALE}x to ${count(MAX_SCALE)}x the problem's traffic`);
    expect(value('a grid path or string value; a `--cost` expression')).toContain(`${count(MAX_COST_LENGTH)} characters`);
  });
});
