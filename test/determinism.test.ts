/**
 * Determinism (docs/model.md section 7): the same configuration and seeds give the same records,
 * bit for bit, whichever engine runs them and however time is cut into windows; other seeds
 * give other records.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runReference } from '../src/engine/reference.js';
import { loadProblem } from '../src/problem/parse.js';
import { closePool, configFor, problemFile, testPool } from './support.js';

afterAll(closePool);

const PROBLEMS = ['hot-prefix', 'coding-agents', 'mmc', 'multi-tenant-prefixes', 'small-kv-cache', 'hung-replica', 'conversation-trace'];

describe('determinism', () => {
  for (const name of PROBLEMS) {
    const cases = loadProblem(problemFile(name)).cases.map((c) => c.name);
    it(`${name}: same seed, same records; the pool equals the reference engine`, async () => {
      for (const caseName of cases) {
        const { config } = configFor(name, [], caseName);
        const reference = runReference(config, 7, 0, 6);
        expect(Array.from(runReference(config, 7, 0, 6))).toEqual(Array.from(reference));
        const pooled = await testPool().run(config, 7, 0, 6);
        expect(Array.from(pooled)).toEqual(Array.from(reference));
        // instance i of a run does not depend on which instances run beside it
        expect(Array.from(runReference(config, 7, 3, 3))).toEqual(Array.from(reference.subarray(3 * config.resultWords)));
      }
    });
  }

  it('other seeds and other instances differ', () => {
    const { config } = configFor('hot-prefix');
    const a = runReference(config, 1, 0, 1);
    const b = runReference(config, 2, 0, 1);
    const c = runReference(config, 1, 1, 1);
    expect(Array.from(a)).not.toEqual(Array.from(b));
    expect(Array.from(a)).not.toEqual(Array.from(c));
  });

  for (const name of ['hot-prefix', 'coding-agents', 'mmc', 'conversation-trace']) {
    it(`${name}: 1, 7 and 60 time windows give identical records`, () => {
      for (const caseName of ['as-given', ...(name === 'mmc' ? [] : ['server-dies', 'slow-dependency'])]) {
        const { config } = configFor(name, [], caseName);
        const one = Array.from(runReference(config, 3, 0, 4, 1));
        expect(Array.from(runReference(config, 3, 0, 4, 7))).toEqual(one);
        expect(Array.from(runReference(config, 3, 0, 4, 60))).toEqual(one);
      }
    });
  }
});
