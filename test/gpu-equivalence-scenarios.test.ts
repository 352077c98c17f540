import { it } from 'vitest';
import { POLICIES, RUN_MS, SEEDS, configOf, describeEquivalence, extraConfigs } from './gpu-equivalence-support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: every failure and slowdown target, every router policy', (expectSame) => {
  for (const [name, config] of extraConfigs()) {
    it(`${name}: ${SEEDS.scenarios} seeds`, () => expectSame(config, SEEDS.scenarios), RUN_MS);
  }

  for (const policy of POLICIES) {
    it(`hot-prefix, server-dies, router.policy=${policy}: ${SEEDS.policy} seeds`, () =>
      expectSame(configOf('hot-prefix', 'server-dies', [`router.policy=${policy}`]), SEEDS.policy), RUN_MS);
  }
});
