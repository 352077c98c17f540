/**
 * The JSON Schema editors use to check and complete problem files as they are typed
 * (`# yaml-language-server: $schema=./problem.schema.json`). Generated from the zod schema;
 * a test keeps problems/problem.schema.json equal to what this produces.
 */
import { z } from 'zod';
import { jsonSchemaExtras, jsonSchemaHints, problemFileSchema } from './schema.js';

export const PROBLEM_SCHEMA_FILE = 'problems/problem.schema.json';

export function problemJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(problemFileSchema, {
    io: 'input',
    // yaml-language-server and most editors speak draft-07 best
    target: 'draft-07',
    override: (ctx) => {
      const extra = jsonSchemaExtras.get(ctx.zodSchema);
      if (extra !== undefined) Object.assign(ctx.jsonSchema, structuredClone(extra));
      const hint = jsonSchemaHints.get(ctx.zodSchema);
      if (hint === undefined) return;
      const json = ctx.jsonSchema as Record<string, unknown>;
      for (const key of Object.keys(json)) {
        if (key !== 'description' && key !== 'default') delete json[key];
      }
      Object.assign(json, structuredClone(hint));
    },
  }) as Record<string, unknown>;
}

/** The file's exact text: stable key order, two-space indent, final newline. */
export function problemJsonSchemaText(): string {
  return `${JSON.stringify(problemJsonSchema(), null, 2)}\n`;
}
