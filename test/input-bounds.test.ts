/**
 * Input that would exhaust the parser or the process: each is refused with a ServesimError
 * naming the bound or the reason, never a stack trace, a RangeError or a hang. The special
 * files go through the compiled CLI (`npx tsc` first), so a hang is a timeout, not a stuck test.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCost } from '../src/hint/cost.js';
import { loadProblem, parseProblem, problemFromObject } from '../src/problem/parse.js';
import { loadSweep, sweepFromObject } from '../src/sweep/spec.js';
import { problemFile, thrown } from './support.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'servesim-bounds-'));
}

/** Nine anchors, each a list of nine aliases of the one before: 9^9 strings once expanded. */
function billionLaughs(): string {
  const names = 'abcdefghi';
  let text = `${names[0]}: &${names[0]} [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n`;
  for (let i = 1; i < names.length; i++) {
    text += `${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(', ')}]\n`;
  }
  return text;
}

describe('YAML bounds', () => {
  it('billion laughs: refused at the alias limit, not a ReferenceError', () => {
    const err = thrown(() => parseProblem(billionLaughs(), 'laughs.yaml'));
    expect(err.code).toBe('SERVESIM_INPUT_TOO_LARGE');
    expect(err.message).toBe('laughs.yaml: line 2, column 8: aliases (*name) expand more than 100 times; the limit is 100');
    expect(err).toMatchObject({ issues: [{ path: 'line 2, column 8' }] });
  });

  it('deep nesting: refused at the depth limit with its line, not a stack overflow', () => {
    const err = thrown(() => parseProblem(`id: x\ngoals: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, 'deep.yaml'));
    expect(err.code).toBe('SERVESIM_INPUT_TOO_LARGE');
    expect(err.message).toMatch(/^deep\.yaml: line 2, column \d+: nested deeper than 64 levels; the limit is 64$/);
  });

  it('32,000 keys: refused at the node limit before the document is built', () => {
    const text = Array.from({ length: 32_000 }, (_, i) => `key${i}: 1\n`).join('');
    const err = thrown(() => parseProblem(text, 'keys.yaml'));
    expect(err.code).toBe('SERVESIM_INPUT_TOO_LARGE');
    expect(err.message).toMatch(/^keys\.yaml: line 5001, column 1: more than 10,000 keys and values; the limit is 10,000$/);
  });

  it('an object (not text) gets the same bounds: 150,000 failures are refused before validation', () => {
    const failures = Array.from({ length: 150_000 }, () => ({ target: 'gpu', replica: 0 }));
    const err = thrown(() => problemFromObject({ id: 'x', failures }, [], 'inline problem'));
    expect(err.code).toBe('SERVESIM_INPUT_TOO_LARGE');
    expect(err.message).toBe('inline problem: (problem): more than 10,000 keys and values; the limit is 10,000');
  });

  it('a --set value gets the same bounds: 20,000 cases are refused naming the --set, not listed', () => {
    const err = thrown(() => loadProblem('problems/mmc.yaml', [`cases=[${Array(20_000).fill('x').join(', ')}]`]));
    expect(err.code).toBe('SERVESIM_OVERRIDE_INVALID');
    expect(err).toMatchObject({ issues: [{ path: 'cases', message: 'more than 10,000 keys and values; the limit is 10,000' }] });
  });

  it('a file over 1 MiB: refused by its size, before it is read', () => {
    const file = join(tempDir(), 'big.yaml');
    writeFileSync(file, `# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    const err = thrown(() => loadProblem(file));
    expect(err.code).toBe('SERVESIM_INPUT_TOO_LARGE');
    expect(err.message).toBe(`problem file ${file} is 2,097,155 bytes; the limit is 1 MiB (1,048,576 bytes)`);
  });
});

describe('special files as input', () => {
  const BIN = 'dist/src/cli/main.js';
  /** The CLI on a problem file; a hang ends at the timeout with no status. */
  const runOn = (file: string) => spawnSync(process.execPath, [BIN, 'run', file, '--seeds', '1'], { encoding: 'utf8', timeout: 20_000 });

  it('/dev/zero is refused as a device, not read for ever', () => {
    const out = runOn('/dev/zero');
    expect(out.status).toBe(2);
    expect(out.stderr).toBe('servesim: cannot read problem file /dev/zero: it is a device\n');
  });

  it('a FIFO is refused, not waited on', () => {
    const fifo = join(tempDir(), 'problem.yaml');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const out = runOn(fifo);
    expect(out.status).toBe(2);
    expect(out.stderr).toBe(`servesim: cannot read problem file ${fifo}: it is a FIFO\n`);
  });
});

describe('sweep files', () => {
  it("a sweep whose problem file is not valid YAML: the problem's error, naming the file as the sweep does", () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.yaml'), 'id: x\ngoals: { success: 99%\n');
    writeFileSync(join(dir, 'sweep.yaml'), 'problem: bad.yaml\ngrid: { server.slots: [4] }\n');
    const err = thrown(() => loadSweep(join(dir, 'sweep.yaml')));
    expect(err.code).toBe('SERVESIM_PROBLEM_INVALID');
    expect(err.message).toMatch(/^bad\.yaml: invalid problem: line \d+, column \d+: YAML syntax error: /);
    expect(err.message).not.toContain(dir);
  });

  it('seeds over the per-run limit are refused, naming the limit and why', () => {
    const err = thrown(() => sweepFromObject({ problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 20_000 }));
    expect(err.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(err.message).toBe("invalid sweep: seeds: at most 10,000 seeds per case and grid point (each case's results are held in memory at once)");
  });

  it("a shipped problem is named by its file name, not the server's path to it", () => {
    const err = thrown(() => sweepFromObject({ problem: 'mmc', grid: { 'server.slots': [0] } }));
    expect(err.message).toContain('grid point 0 (server.slots=0): mmc.yaml: invalid problem: server.slots: ');
    expect(err.message).not.toContain(problemFile('mmc'));
  });
});

describe('cost expressions', () => {
  it('deep parentheses: refused at the depth limit, not a stack overflow', () => {
    const err = thrown(() => parseCost(`${'('.repeat(400)}1${')'.repeat(400)}`));
    expect(err.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(err.path).toBe('cost');
    expect(err.message).toBe('cost: parentheses and signs nest deeper than 32 levels at column 33; the limit is 32');
    // the limit itself is still a cost
    expect(parseCost(`${'('.repeat(32)}gpu.slots${')'.repeat(32)}`).evaluate(() => 3)).toBe(3);
  });

  it('a chain of signs counts as nesting too', () => {
    expect(thrown(() => parseCost(`${'-'.repeat(40)}gpu.slots`)).message).toContain('nest deeper than 32 levels at column 33');
  });

  it('a cost over 1,000 characters is refused, naming the limit', () => {
    const err = thrown(() => parseCost(Array(600).fill('1').join('+')));
    expect(err.message).toBe('cost: 1,199 characters; the limit is 1,000');
  });
});
