import { it } from 'vitest';
import { POLICIES, RUN_MS, SEEDS, describeEquivalence, extraConfigs } from './gpu-equivalence-support.js';
import { configFor } from './support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: every failure and slowdown target, every router policy', (expectSame) => {
  for (const [name, config] of extraConfigs()) {
    it(`${name}: ${SEEDS.scenarios} seeds`, () => expectSame(config, SEEDS.scenarios), RUN_MS);
  }

  for (const policy of POLICIES) {
    it(`hot-prefix, server-dies, router.policy=${policy}: ${SEEDS.policy} seeds`, () =>
      expectSame(configFor('hot-prefix', [`router.policy=${policy}`], 'server-dies').config, SEEDS.policy), RUN_MS);
  }
});
