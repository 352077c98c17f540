import { expect, it } from 'vitest';
import { P, R } from '../src/engine/layout.js';
import { CASES, RUN_MS, SEEDS, describeEquivalence, sum } from './gpu-equivalence-support.js';
import { configFor } from './support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: seed problems and M/M/c', (expectSame) => {
  for (const file of ['hot-prefix', 'coding-agents'] as const) {
    for (const caseName of CASES) {
      it(`${file}, ${caseName}: ${SEEDS[file]} seeds`, () => expectSame(configFor(file, [], caseName).config, SEEDS[file]), RUN_MS);
    }
  }

  it(`mmc (M/M/4): ${SEEDS.mmc} seeds`, () => expectSame(configFor('mmc').config, SEEDS.mmc), RUN_MS);

  // Overloaded (issue 12), in M/M/c's shape: a full job table refuses arrivals from the warmup
  // on; an event heap too small (a capacity sized too small) stops most instances mid-run.
  it(`mmc, M/M/2 at 200% load: ${SEEDS.mmc} seeds`, async () => {
    const { config } = configFor('mmc', ['server.slots=2', 'traffic.rate=40']);
    const records = await expectSame(config, SEEDS.mmc);
    expect(sum(config, records, R.OVERLOADED)).toBeGreaterThan(sum(config, records, R.ARRIVALS) / 3);
  }, RUN_MS);

  it(`mmc, its event heap too small: ${SEEDS.mmc} seeds`, async () => {
    const { config } = configFor('mmc', ['server.timeout=1s']);
    config.params[P.HEAP_CAP] = 55;
    const records = await expectSame(config, SEEDS.mmc);
    expect(sum(config, records, R.OVERLOADED)).toBeGreaterThan(0);
  }, RUN_MS);
});
