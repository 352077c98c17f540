import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROBLEM_SCHEMA_FILE, problemJsonSchemaText } from '../src/problem/schema-json.js';

// Regenerate after changing src/problem/schema.ts:
//   SERVESIM_WRITE_SCHEMA=1 npx vitest run test/problem-schema-json.test.ts
describe('problems/problem.schema.json', () => {
  it('equals what the zod schema generates now', () => {
    const generated = problemJsonSchemaText();
    if (process.env['SERVESIM_WRITE_SCHEMA'] === '1') writeFileSync(PROBLEM_SCHEMA_FILE, generated);
    const committed = readFileSync(PROBLEM_SCHEMA_FILE, 'utf8');
    expect(committed, 'stale: regenerate with SERVESIM_WRITE_SCHEMA=1 npx vitest run test/problem-schema-json.test.ts').toBe(generated);
  });

  it('describes every top-level field and refuses unknown ones', () => {
    const schema = JSON.parse(problemJsonSchemaText()) as {
      properties: Record<string, unknown>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(expect.arrayContaining(['id', 'goals', 'traffic', 'workload']));
    for (const key of ['lb', 'app', 'orchestrator', 'router', 'gpu', 'tools', 'server', 'cases', 'failures', 'scenarios']) {
      expect(schema.properties).toHaveProperty(key);
    }
  });
});
