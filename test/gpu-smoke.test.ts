// npm test's GPU check: the kernel runs and equals the reference engine bit for bit on one small
// case, in the one shape (M/M/c) the matrix compiles first anyway; `npm run test:gpu` runs the
// whole matrix (vitest.config.ts).
import { it } from 'vitest';
import { RUN_MS, describeEquivalence } from './gpu-equivalence-support.js';
import { configFor } from './support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: a smoke test', (expectSame) => {
  // an odd count: not a multiple of any workgroup size
  it('mmc (M/M/4): 33 seeds', () => expectSame(configFor('mmc').config, 33), RUN_MS);
});
