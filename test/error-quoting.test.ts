/**
 * What an error quotes back from its input: control characters escaped, so an input cannot
 * drive a terminal that shows the message; and the field to blame, the one the user changed,
 * when a limit counts several (a case's arrivals: rate x duration).
 */
import { describe, expect, it } from 'vitest';
import { loadProblem, problemFromObject } from '../src/problem/parse.js';
import { buildServer } from '../src/service/server.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { thrown, TINY_QUEUE } from './support.js';

/** ESC [31m (a colour), DEL, C1's CSI, and a right-to-left override. */
const NASTY = '\u001b[31mred\u007f\u009b\u202e';
const ESCAPED = '\\u001b[31mred\\u007f\\u009b\\u202e';
/** Any character a terminal acts on rather than shows. */
// eslint-disable-next-line no-control-regex -- finding them is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('an error quoting its input', () => {
  const cases: [string, () => unknown][] = [
    ['an unknown key', () => problemFromObject({ ...TINY_QUEUE, [NASTY]: 1 })],
    ['a case name', () => sweepFromObject({ problem: TINY_QUEUE, grid: {}, cases: [NASTY] })],
    ['a grid value', () => sweepFromObject({ problem: TINY_QUEUE, grid: { 'server.slots': [NASTY] } })],
    ['a --set path', () => problemFromObject(TINY_QUEUE, [`${NASTY}=1`])],
    ['a problem id', () => sweepFromObject({ problem: NASTY, grid: {} })],
  ];
  for (const [what, f] of cases) {
    it(`escapes the control characters of ${what}`, () => {
      const err = thrown(f);
      expect(err.message).not.toMatch(UNPRINTABLE);
      expect(err.message).toContain(ESCAPED);
      for (const issue of (err as { issues?: { path: string; message: string }[] }).issues ?? []) {
        expect(`${issue.path}: ${issue.message}`).not.toMatch(UNPRINTABLE);
      }
    });
  }

  it('in an HTTP answer too, fastify’s own validation messages included', async () => {
    const app = buildServer();
    try {
      for (const payload of [{ problem: { ...TINY_QUEUE, [NASTY]: 1 }, grid: {} }, { problem: 'mmc', grid: {}, [NASTY]: 1 }]) {
        const res = await app.inject({ method: 'POST', url: '/v1/sweeps', payload });
        expect(res.statusCode).toBe(400);
        const { detail, issues } = res.json();
        expect(detail).toContain(ESCAPED);
        expect(JSON.stringify(JSON.parse(res.body))).not.toMatch(UNPRINTABLE);
        expect(issues[0].path).toContain(ESCAPED);
      }
    } finally {
      await app.close();
    }
  });
});

describe("a case's arrivals past the limit", () => {
  it('name traffic.duration when a --set lengthened it', () => {
    const err = thrown(() => loadProblem('problems/hot-prefix.yaml', ['traffic.duration=1700s']));
    expect(err.message).toMatch(/invalid problem: traffic\.duration: case as-given simulates 51,900 arrivals per instance.* \(from --set traffic\.duration=1700s\)/);
    expect(err.message).not.toMatch(/traffic\.rate:/);
  });

  it('name traffic.rate when a --set raised it', () => {
    const err = thrown(() => loadProblem('problems/hot-prefix.yaml', ['traffic.rate=1300']));
    expect(err.message).toMatch(/invalid problem: traffic\.rate: case as-given simulates 78,000 arrivals per instance.* \(from --set traffic\.rate=1300\)/);
  });

  it('name the grid axis that lengthened it', () => {
    const err = thrown(() => sweepFromObject({ problem: 'hot-prefix', grid: { 'traffic.duration': ['30s', '1700s'] }, seeds: 1 }));
    expect(err.message).toMatch(/grid point 1 \(traffic\.duration=1700s\): .*invalid problem: traffic\.duration: case as-given simulates 51,900 arrivals/);
  });
});
