/**
 * The rules of eslint.config.js that keep the architecture: a folder of src/ imports only the
 * layers below it (docs/architecture.md), and no import cycles. `npm run lint` runs them on the
 * tree; these show that they fail where they should.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));
// no-cycle off: it would parse all that a probe reaches (src/cli reaches every file)
const eslint = new ESLint({ cwd: root, overrideConfig: { rules: { 'import-x/no-cycle': 'off' } } });

/** The rules `text` breaks, as if it were the file at `path` (relative to the root). */
async function rulesBroken(path: string, text: string): Promise<(string | null)[]> {
  const [result] = await eslint.lintText(text, { filePath: join(root, path) });
  return result!.messages.map((m) => m.ruleId);
}

describe('layers', () => {
  it('a lower layer importing a higher one fails', async () => {
    const upward = "import { main } from '../cli/program.js';\n\nexport const probe = main;\n";
    expect(await rulesBroken('src/model/layer-probe.ts', upward)).toEqual(['import-x/no-restricted-paths']);
    const dynamic = "export const probe = (): Promise<unknown> => import('../run/run.js');\n";
    expect(await rulesBroken('src/engine/layer-probe.ts', dynamic)).toEqual(['import-x/no-restricted-paths']);
    const top = "import { ServesimError } from './errors.js';\nimport { runProblem } from './run/run.js';\n\nexport const probe = [ServesimError, runProblem];\n";
    expect(await rulesBroken('src/layer-probe.ts', top)).toEqual(['import-x/no-restricted-paths']);
  });

  it('layers on one row do not import each other', async () => {
    const sideways = "import { SimulationPool } from '../pool/pool.js';\n\nexport const probe = SimulationPool;\n";
    expect(await rulesBroken('src/gpu/layer-probe.ts', sideways)).toEqual(['import-x/no-restricted-paths']);
  });

  it('a higher layer importing lower ones passes', async () => {
    const downward = "import { ServesimError } from '../errors.js';\nimport type { Problem } from '../model/problem.js';\nimport { runProblem } from '../run/run.js';\n\nexport const probe = (p: Problem): unknown => [ServesimError, runProblem, p];\n";
    expect(await rulesBroken('src/cli/layer-probe.ts', downward)).toEqual([]);
  });

  it('every folder of src/ has a layer', async () => {
    const folders = readdirSync(join(root, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(folders.length).toBeGreaterThan(0);
    const config = (await eslint.calculateConfigForFile(join(root, 'src', 'x.ts'))) as { rules: Record<string, unknown[]> };
    const { zones } = config.rules['import-x/no-restricted-paths']![1] as { zones: { target: string | string[]; from: string | string[] }[] };
    // a zone restricts its target, or restricts others from importing it (the top layer)
    const named = new Set(zones.flatMap((z) => [z.target, z.from].flat()));
    for (const folder of folders) expect(named, folder).toContain(`src/${folder}`);
  });
});

describe('cycles', () => {
  mkdirSync(join(root, 'test', 'output'), { recursive: true }); // not in a fresh clone
  const dir = mkdtempSync(join(root, 'test', 'output', 'lint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('two modules that import each other fail', async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.ts'), "import { b } from './b.js';\n\nexport const a = (): number => b() + 1;\n");
    writeFileSync(join(dir, 'b.ts'), "import { a } from './a.js';\n\nexport const b = (): number => a() - 1;\n");
    // test/output/ is ignored by `npm run lint`; linted here on purpose
    const results = await new ESLint({ cwd: root, ignore: false }).lintFiles([join(dir, 'a.ts'), join(dir, 'b.ts')]);
    expect(results.map((r) => r.messages.map((m) => m.ruleId))).toEqual([['import-x/no-cycle'], ['import-x/no-cycle']]);
  });
});
