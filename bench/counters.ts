/**
 * `npm run bench:counters [-- BASE]`: what the metrics' counters (TTFT, TPOT, goodput, per
 * component loads and waits: issue 13) cost the reference engine per event. Builds the engine
 * as it was at git revision BASE (default: the last commit before them) into a temporary
 * folder, then runs both on the same instances, alternating, in this one process: the events
 * are the same (checked), so the time ratio is the cost per event. Asserts nothing; writes
 * bench/results/counters.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { EngineConfig } from '../src/engine/compile.js';
import { R } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { configOf, label } from './measure.js';

/** The commit before the counters: the engines as they were. */
const DEFAULT_BASE = '4e55066';
const WORK: { problem: string; sets: string[]; instances: number }[] = [
  { problem: 'mmc', sets: [], instances: 48 },
  { problem: 'hot-prefix', sets: ['router.policy=least-loaded', 'gpu.slots=16'], instances: 16 },
  { problem: 'coding-agents', sets: ['router.policy=prefix-affinity', 'gpu.slots=4'], instances: 16 },
];
const ROUNDS = 5;

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The engine of revision `base`: its reference engine, result layout, and its compile of a problem. */
interface BaseEngine {
  readonly run: (config: EngineConfig, seed: number, first: number, count: number) => Uint32Array;
  readonly eventsField: number;
  readonly configOf: (problem: string, sets: readonly string[]) => EngineConfig;
}

/**
 * Revision `base`'s src, compiled (types unchecked) into a folder under node_modules/.cache,
 * so that its imports of npm packages (zod, yaml) resolve to this checkout's.
 */
async function baseEngine(base: string, dir: string): Promise<BaseEngine> {
  const tar = execFileSync('git', ['-C', root, 'archive', base, 'src'], { maxBuffer: 1 << 28 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  const entries = readdirSync(join(dir, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => join(dir, 'src', f));
  execFileSync(join(root, 'node_modules/.bin/tsc'), [
    '--noCheck', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022',
    '--preserveConstEnums', '--skipLibCheck', '--outDir', join(dir, 'dist'), '--rootDir', dir, ...entries,
  ]);
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  const load = (module: string) => import(pathToFileURL(join(dir, 'dist/src', module)).href);
  const [reference, layout, compile, parse] = await Promise.all([
    load('engine/reference.js'), load('engine/layout.js'), load('engine/compile.js'), load('problem/parse.js'),
  ]);
  return {
    run: reference.runReference,
    eventsField: layout.R.EVENTS,
    configOf: (problem, sets) => {
      const p = parse.loadProblem(join(root, `problems/${problem}.yaml`), sets);
      return compile.compile(p, parse.selectCases(p, ['as-given'])[0]);
    },
  };
}

/** Sums a result field over records of `words` words each. */
function total(records: Uint32Array, words: number, field: number): number {
  let sum = 0;
  for (let i = field; i < records.length; i += words) sum += records[i]! + records[i + 1]! * 2 ** 32;
  return sum;
}

function seconds(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function main(): Promise<void> {
  const base = process.argv[2] ?? DEFAULT_BASE;
  mkdirSync(join(root, 'node_modules/.cache'), { recursive: true });
  const dir = mkdtempSync(join(root, 'node_modules/.cache/servesim-base-'));
  try {
    const old = await baseEngine(base, dir);
    const lines = [
      '# What the metrics\' counters cost per event',
      '',
      `Command: \`npm run bench:counters -- ${base}\` (the reference engine at ${base} against this checkout's, one thread, ${ROUNDS} alternating rounds; the better of each engine's rounds).`,
      '',
      '| work | instances | events | before, s | now, s | now / before |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
    ];
    for (const item of WORK) {
      const config = configOf(item.problem, item.sets);
      // the base engine reads the params as laid out then: its own compile lays them out
      const oldConfig = old.configOf(item.problem, item.sets);
      let before = Infinity;
      let now = Infinity;
      let oldRecords: Uint32Array = new Uint32Array(0);
      let newRecords: Uint32Array = new Uint32Array(0);
      for (let round = 0; round < ROUNDS; round++) {
        before = Math.min(before, seconds(() => (oldRecords = old.run(oldConfig, 1, 0, item.instances))));
        now = Math.min(now, seconds(() => (newRecords = runReference(config, 1, 0, item.instances))));
      }
      const oldEvents = total(oldRecords, oldConfig.resultWords, old.eventsField);
      const events = total(newRecords, config.resultWords, R.EVENTS);
      if (oldEvents !== events) throw new Error(`${label(item.problem, item.sets)}: ${events} events now, ${oldEvents} at ${base}: not the same simulation`);
      lines.push(`| ${label(item.problem, item.sets)} | ${item.instances} | ${events.toLocaleString('en')} | ${before.toFixed(3)} | ${now.toFixed(3)} | ${(now / before).toFixed(3)} |`);
    }
    const text = lines.join('\n') + '\n';
    mkdirSync(join(root, 'bench/results'), { recursive: true });
    writeFileSync(join(root, 'bench/results/counters.md'), text);
    process.stdout.write(text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
