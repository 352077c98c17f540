/**
 * Field paths (`--set`, a sweep's grid, POST /v1/sweeps) only ever name fields the schema has:
 * a path through `__proto__`, `constructor` or `prototype` is refused, naming the field, and
 * leaves Object.prototype as it was, so the next request still works.
 */
import { spawnSync } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { loadProblem, problemFromObject } from '../src/problem/index.js';
import { applyOverrides } from '../src/problem/overrides.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { thrown } from './support.js';

const MMC = 'problems/mmc.yaml';
const PROTOTYPE_MEMBERS = Object.getOwnPropertyNames(Object.prototype).sort();

/** A path through Object.prototype writes `rateScale` (or `polluted`) onto every object. */
function pollution(): unknown[] {
  const probe: Record<string, unknown> = {};
  return [probe['rateScale'], probe['polluted'], Object.getOwnPropertyNames(Object.prototype).sort()];
}

// today's code pollutes: undo it, so one failing test does not fail the rest
afterEach(() => {
  for (const name of Object.getOwnPropertyNames(Object.prototype)) {
    if (!PROTOTYPE_MEMBERS.includes(name)) delete (Object.prototype as Record<string, unknown>)[name];
  }
});

function issuesOf(e: ServesimError): { path: string; message: string }[] {
  return (e as ServesimError & { issues: { path: string; message: string }[] }).issues;
}

describe('--set paths', () => {
  it.each([
    ['scenarios.__proto__.rateScale=2', 'scenarios.__proto__', 'must be lower-case words joined by -'],
    ['scenarios.constructor.rateScale=2', 'scenarios.constructor', 'is reserved'],
    ['scenarios.prototype.rateScale=2', 'scenarios.prototype', 'is reserved'],
  ])('%s is refused as a case name and writes nothing onto Object.prototype', (set, path, why) => {
    const e = thrown(() => loadProblem(MMC, [set]));
    expect(e.code).toBe('SERVESIM_OVERRIDE_INVALID');
    expect(issuesOf(e)).toEqual([{ path, message: expect.stringContaining(why) }]);
    expect(pollution()).toEqual([undefined, undefined, PROTOTYPE_MEMBERS]);
    expect(loadProblem(MMC, ['server.slots=5']).server?.slots).toBe(5);
  });

  it('an empty --set is refused naming the option, not an empty path', () => {
    const e = thrown(() => applyOverrides({}, ['']));
    expect(issuesOf(e)).toEqual([{ path: '(--set)', message: expect.stringContaining('expected PATH=VALUE') }]);
  });

  it('applyOverrides refuses a path through __proto__ at any depth without touching Object.prototype', () => {
    const e = thrown(() => applyOverrides({ scenarios: { 'peak-hour': {} } }, ['scenarios.__proto__.burst.scale=3']));
    expect(issuesOf(e).map((i) => i.path)).toEqual(['scenarios.__proto__']);
    expect(pollution()).toEqual([undefined, undefined, PROTOTYPE_MEMBERS]);
  });
});

describe('the CLI (needs the build)', () => {
  it('run --set through __proto__ exits 2 with the field named, not a TypeError stack', () => {
    const r = spawnSync(process.execPath, ['dist/src/cli/main.js', 'run', MMC, '--set', 'scenarios.__proto__.rateScale=2'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('scenarios.__proto__: "__proto__" is not a valid name');
    expect(r.stderr).not.toMatch(/TypeError|\n\s+at /);
  });
});

describe('problem objects', () => {
  const base = {
    id: 'q',
    goals: { success: 0.99, p99: '1s' },
    traffic: { rate: 10, duration: '30s' },
    workload: { kind: 'job' },
    server: { slots: 4, service: '100ms' },
  };

  it('a case named __proto__ (a JSON key) is an error, not silently dropped', () => {
    const raw = JSON.parse(`{"__proto__": {"rateScale": 2}}`) as unknown;
    const e = thrown(() => problemFromObject({ ...base, scenarios: raw }));
    expect(issuesOf(e)).toContainEqual({ path: 'scenarios.__proto__', message: expect.stringContaining('not a valid name') });
  });

  it('a case named constructor is refused', () => {
    const e = thrown(() => problemFromObject({ ...base, scenarios: { constructor: { rateScale: 2 } } }));
    expect(issuesOf(e)).toContainEqual({ path: 'scenarios.constructor', message: expect.stringContaining('is reserved') });
  });
});

/** A sweep whose grid has an own key `__proto__`, as JSON.parse (and a request body) makes it. */
const PROTO_GRID = '{"problem": "mmc", "grid": {"__proto__": [2], "server.slots": [4]}, "cases": ["as-given"], "seeds": 1, "engine": "cpu"}';

describe('sweep grids', () => {
  it('a grid path through __proto__ is refused, naming it, and the next sweep parses', () => {
    const e = thrown(() => sweepFromObject({ problem: 'mmc', grid: { 'scenarios.__proto__.rateScale': [2] }, seeds: 1 }));
    expect(e.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(e.message).toContain('scenarios.__proto__');
    expect(pollution()).toEqual([undefined, undefined, PROTOTYPE_MEMBERS]);
    expect(sweepFromObject({ problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 1 }).points).toHaveLength(1);
  });

  it('a grid key that is exactly __proto__ (a JSON key) is refused, naming it, not dropped with its axis', () => {
    const e = thrown(() => sweepFromObject(JSON.parse(PROTO_GRID)));
    expect(e.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(issuesOf(e)).toEqual([{ path: 'grid.__proto__', message: expect.stringContaining('not a problem field path') }]);
  });
});

describe('POST /v1/sweeps', () => {
  let app: FastifyInstance;
  beforeAll(() => {
    app = buildServer();
  });
  afterAll(async () => {
    await app.close();
    await closeEngines();
  });

  it('a grid path through __proto__ is a 400 naming it; later requests still work', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/sweeps',
      payload: { problem: 'mmc', grid: { 'scenarios.__proto__.rateScale': [2] }, seeds: 1 },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'SERVESIM_SWEEP_INVALID', detail: expect.stringContaining('scenarios.__proto__') });
    expect(pollution()).toEqual([undefined, undefined, PROTOTYPE_MEMBERS]);

    const problems = await app.inject({ method: 'GET', url: '/v1/problems' });
    expect(problems.statusCode).toBe(200);
    const good = await app.inject({
      method: 'POST',
      url: '/v1/sweeps',
      headers: { accept: 'application/json' },
      payload: { problem: 'mmc', grid: { 'server.slots': [4] }, cases: ['as-given'], seeds: 1, engine: 'cpu' },
    });
    expect(good.statusCode).toBe(200);
  });

  it('a grid key that is exactly __proto__ is a 400 naming it, not "invalid JSON" and not a sweep without that axis', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/sweeps', headers: { 'content-type': 'application/json' }, payload: PROTO_GRID });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'SERVESIM_SWEEP_INVALID', detail: expect.stringContaining('grid.__proto__: not a problem field path') });
  });
});
