import { it } from 'vitest';
import { CASES, RUN_MS, SEEDS, describeEquivalence } from './gpu-equivalence-support.js';
import { configFor } from './support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: seed problems and M/M/c', (expectSame) => {
  for (const file of ['hot-prefix', 'coding-agents'] as const) {
    for (const caseName of CASES) {
      it(`${file}, ${caseName}: ${SEEDS[file]} seeds`, () => expectSame(configFor(file, [], caseName).config, SEEDS[file]), RUN_MS);
    }
  }

  it(`mmc (M/M/4): ${SEEDS.mmc} seeds`, () => expectSame(configFor('mmc').config, SEEDS.mmc), RUN_MS);
});
