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
    now = 1000;
    p.onProgress(at(0, 64)); // no point has finished: no time left yet
    now = 3000;
    p.onProgress(at(1, 96)); // within 5 s of the last line: not printed, but the pace starts here
    now = 7000;
    p.onProgress(at(6, 384)); // 288 instances in 4 s since the first point: 1,152 left take 16 s
    now = 8000;
    p.stop();
    expect(text()).toBe(
      'hot-prefix-slots 0/24 grid points | 64 instances/s | ETA –\n' +
        'hot-prefix-slots 6/24 grid points | 55 instances/s | ETA 16s\n' +
        'hot-prefix-slots 6/24 grid points | 48 instances/s\n',
    );
  });

  it('takes the time left from the pace after the first point, not the start-up before it', () => {
    const { s, text } = stream(false);
    let now = 0;
    const p = createSweepProgress(s, 'x', () => now);
    // 4 s of threads starting and first seeds, then 704 instances in 5 s
    now = 4000;
    p.onProgress(at(1, 64));
    now = 9000;
    p.onProgress(at(12, 768));
    // from the start it would be 9 s x 768 left / 768 done = 9 s; from the first point, 5 s x 768 / 704
    expect(text()).toContain('12/24 grid points | 85 instances/s | ETA 5s\n');
  });

  it('draws a bar on a terminal and clears it at the end', () => {
    const { s, text } = stream(true);
    let now = 0;
    const p = createSweepProgress(s, 'hot-prefix-slots', () => now);
    now = 1000;
    p.onProgress(at(1, 64));
    now = 2000;
    p.onProgress(at(3, 192));
    p.stop();
    expect(text()).toContain('3/24 grid points | 96 instances/s | ETA 11s');
    expect(text()).toContain('\x1b[?25h'); // the cursor is shown again
  });
});
