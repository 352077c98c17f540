// `npm run test:unit`: the test files that need no build (no CPU pool: its workers run from
// dist/), no child process, no service, no GPU adapter and no browser, each a few seconds at
// most, to run after every edit. Chosen by their times in a full `npm test`; `npm test` runs
// them too. test/unit-list.test.ts checks that each exists and starts nothing it should not.
import { defineConfig } from 'vitest/config';
import { shared } from './vitest.config.ts';

export const UNIT = [
  'test/batch-params.test.ts',
  'test/blis-latency-model.test.ts',
  'test/capacity-bisection.test.ts',
  'test/did-you-mean.test.ts',
  'test/docs.test.ts',
  'test/engine-capacity.test.ts',
  'test/engine-mirror.test.ts',
  'test/format.test.ts',
  'test/hint-cost.test.ts',
  'test/hint-explain.test.ts',
  'test/kernel-shape.test.ts',
  'test/kv-offload.test.ts',
  'test/problem-errors.test.ts',
  'test/problem-files.test.ts',
  'test/problem-overrides.test.ts',
  'test/problem-parse.test.ts',
  'test/problem-schema-json.test.ts',
  'test/problem-source.test.ts',
  'test/problem-units.test.ts',
  'test/queue-chunks.test.ts',
  'test/report-html.test.ts',
  'test/summarize.test.ts',
  'test/sweep-progress.test.ts',
  'test/sweep-spec.test.ts',
  'test/table-sampling.test.ts',
  'test/trace-parse.test.ts',
  'test/trace-problem.test.ts',
  'test/trace-replay.test.ts',
  'test/unit-list.test.ts',
] as const;

export default defineConfig({ test: { ...shared, include: [...UNIT] } });
