/**
 * What the built `servesim` loads: the command table alone for `--version` and `--help` (how
 * fast that starts is measured by hand, not timed here), and for a run the pool does, no
 * WebGPU, whose Dawn prints Vulkan warnings as it starts. A loader hook lists every module the
 * bin imports.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = 'dist/src/cli/main.js';

/** Packages and modules a command may need, none of which the command table itself does. */
const HEAVY = [
  ...['zod', 'yaml', 'fastify', 'apache-arrow', 'hyparquet-writer', 'piscina', 'webgpu', 'cli-progress'].map((p) => `/node_modules/${p}/`),
  '/dist/src/problem/parse.js',
  '/dist/src/run/run.js',
];

const dir = mkdtempSync(join(tmpdir(), 'servesim-startup-'));
// every module the ESM loader loads, one URL a line, to the file $SERVESIM_LOADED names
writeFileSync(
  join(dir, 'hooks.mjs'),
  "import { appendFileSync } from 'node:fs';\n" +
    'export async function load(url, context, nextLoad) {\n' +
    "  appendFileSync(process.env.SERVESIM_LOADED, url + '\\n');\n" +
    '  return nextLoad(url, context);\n' +
    '}\n',
);
writeFileSync(
  join(dir, 'register.mjs'),
  `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
);

let runs = 0;

/** `servesim ARGS` as a process: its status, output, and the modules it loaded. */
function servesim(...args: string[]): { status: number | null; stdout: string; stderr: string; modules: string[] } {
  const log = join(dir, `loaded-${runs++}.txt`);
  writeFileSync(log, '');
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, BIN, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, SERVESIM_LOADED: log },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, modules: readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') };
}

const heavy = (modules: readonly string[]): string[] => modules.filter((m) => HEAVY.some((h) => m.includes(h)));

describe.skipIf(!existsSync(BIN))('the built bin', () => {
  it('prints its version having loaded the command table only', () => {
    const r = servesim('--version');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${(JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version}\n`);
    // the hook saw the bin's modules, so what it did not see was not loaded
    expect(r.modules.some((m) => m.endsWith('/dist/src/cli/program.js'))).toBe(true);
    expect(heavy(r.modules)).toEqual([]);
  });

  it('shows help, its own and a command\'s, as lightly', () => {
    for (const args of [['--help'], ['help', 'run'], ['sweep', '--help'], ['serve', '--help']]) {
      const r = servesim(...args);
      expect(r.status, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toContain('Usage: servesim');
      expect(heavy(r.modules), args.join(' ')).toEqual([]);
    }
  });

  it('runs a small problem on the pool without loading WebGPU or printing its warnings', () => {
    const r = servesim('run', 'mmc', '--seeds', '4', '--set', 'traffic.duration=20s');
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('engine: pool');
    expect(r.stderr).toContain('auto: the CPU pool, without looking for a GPU');
    expect(r.stderr).not.toMatch(/vulkan|warning/i);
    // the run loaded the engines, and not Dawn
    expect(r.modules.some((m) => m.endsWith('/dist/src/run/run.js'))).toBe(true);
    expect(r.modules.filter((m) => m.includes('/node_modules/webgpu/'))).toEqual([]);
    // a table on stdout and progress to a pipe: Arrow, Parquet and the terminal's bar are not needed
    expect(r.modules.filter((m) => /\/node_modules\/(apache-arrow|hyparquet|hyparquet-writer|cli-progress)\//.test(m))).toEqual([]);
  });
});
