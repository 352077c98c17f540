import { it } from 'vitest';
import { CASES, RUN_MS, SEEDS, configOf, describeEquivalence } from './gpu-equivalence-support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: seed problems and M/M/c', (expectSame) => {
  for (const file of ['hot-prefix', 'coding-agents'] as const) {
    for (const caseName of CASES) {
      it(`${file}, ${caseName}: ${SEEDS[file]} seeds`, () => expectSame(configOf(file, caseName), SEEDS[file]), RUN_MS);
    }
  }

  it(`mmc (M/M/4): ${SEEDS.mmc} seeds`, () => expectSame(configOf('mmc', 'as-given'), SEEDS.mmc), RUN_MS);
});
