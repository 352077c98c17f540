import { describe, expect, it } from 'vitest';
import { createSweepProgress } from '../src/cli/sweep-command.js';

function stream(isTTY: boolean): { text: () => string; s: NodeJS.WritableStream & { isTTY: boolean } } {
  let text = '';
  const s = { isTTY, write: (t: string) => ((text += t), true) } as unknown as NodeJS.WritableStream & { isTTY: boolean };
  return { text: () => text, s };
}

const at = (pointsDone: number, instancesDone: number) => ({
  pointsDone,
  pointsTotal: 24,
  instancesDone,
  instancesTotal: 1536,
  arrivalsDone: 0,
});

describe('sweep progress', () => {
  it('says nothing for a sweep under a second', () => {
    const { s, text } = stream(false);
    let now = 0;
    const p = createSweepProgress(s, 'x', () => now);
    now = 900;
    p.onProgress(at(24, 1536));
    p.stop();
    expect(text()).toBe('');
  });

  it('prints grid points, instances per second and time left in logs', () => {
    const { s, text } = stream(false);
    let now = 0;
    const p = createSweepProgress(s, 'hot-prefix-slots', () => now);
    now = 4000;
    p.onProgress(at(6, 384));
    now = 5000;
    p.onProgress(at(7, 400)); // within 5 s of the last line: not printed
    now = 8000;
    p.stop();
    expect(text()).toBe('hot-prefix-slots 6/24 grid points | 96 instances/s | ETA 12s\nhot-prefix-slots 7/24 grid points | 50 instances/s\n');
  });

  it('draws a bar on a terminal and clears it at the end', () => {
    const { s, text } = stream(true);
    let now = 0;
    const p = createSweepProgress(s, 'hot-prefix-slots', () => now);
    now = 2000;
    p.onProgress(at(3, 192));
    p.stop();
    expect(text()).toContain('3/24 grid points | 96 instances/s | ETA 14s');
    expect(text()).toContain('\x1b[?25h'); // the cursor is shown again
  });
});
