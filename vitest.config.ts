import { configDefaults, defineConfig } from 'vitest/config';
import type { Reporter } from 'vitest/reporters';

/**
 * What `npm test` leaves out, by the command that runs it (CI runs all three): the GPU
 * equivalence matrix compiles a kernel shape per configuration, minutes each on llvmpipe
 * with a cold shader cache; the package test packs and installs servesim from the registry.
 */
export const LEFT_OUT = {
  'npm run test:gpu': [
    'test/gpu-equivalence.test.ts',
    'test/gpu-equivalence-scenarios.test.ts',
    'test/gpu-windows.test.ts',
    'test/gpu-device-lost.test.ts',
    'test/gpu-batch.test.ts',
    'test/gpu-sweep.test.ts',
  ],
  'npm run test:package': ['test/package.test.ts'],
} as const;

export const shared = {
  testTimeout: 120_000,
  hookTimeout: 120_000,
  // two cores: simulations are CPU-bound, so test files run one per core
  maxWorkers: 2,
};

// after the summary, so that a newcomer sees what did not run and how to run it
const leftOutReporter: Reporter = {
  onTestRunEnd() {
    for (const [command, files] of Object.entries(LEFT_OUT)) {
      process.stdout.write(`Left out of npm test: ${files.join(', ')}; run them with \`${command}\`.\n`);
    }
  },
};

export default defineConfig({
  test: {
    ...shared,
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...Object.values(LEFT_OUT).flat()],
    reporters: ['default', leftOutReporter],
  },
});
