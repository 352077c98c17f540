/**
 * Where a problem comes from (src/problem/source.ts): an id names a shipped problem, any other
 * string a file, an object is the problem; and a file taken from problems/ is read at its real
 * path, so a symlink there cannot lead out of it (shown on a folder made here, the function
 * pointed at it).
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileInProblems, problemSource, resolveProblemSource, shippedProblemFile, shippedProblemIds, shippedProblemsDir } from '../src/problem/source.js';
import { thrown } from './support.js';

describe('a problem source', () => {
  it('is an id when written as one, else a file; an object is the problem', () => {
    expect(problemSource('mmc')).toEqual({ kind: 'id', id: 'mmc' });
    expect(problemSource('problems/mmc.yaml')).toEqual({ kind: 'file', path: 'problems/mmc.yaml' });
    expect(problemSource('Mmc')).toEqual({ kind: 'file', path: 'Mmc' });
    expect(problemSource({ id: 'x' })).toEqual({ kind: 'inline', problem: { id: 'x' } });
  });

  it('resolves an id to its file in problems/, named by its file name', () => {
    expect(resolveProblemSource(problemSource('mmc'), undefined)).toEqual({ file: realpathSync(join(shippedProblemsDir(), 'mmc.yaml')), shown: 'mmc.yaml' });
    const err = thrown(() => resolveProblemSource(problemSource('no-such'), undefined));
    expect(err.code).toBe('SERVESIM_FILE_UNREADABLE');
    expect(err.message).toMatch(/^no shipped problem "no-such"; known: .*hot-prefix, .*mmc/);
  });

  it('resolves a file path against the base folder, and refuses one without', () => {
    expect(resolveProblemSource(problemSource('../x.yaml'), '.')).toEqual({ file: '../x.yaml', shown: '../x.yaml' });
    expect(resolveProblemSource(problemSource('x.yaml'), '/srv/sweeps')).toEqual({ file: '/srv/sweeps/x.yaml', shown: 'x.yaml' });
    expect(resolveProblemSource(problemSource('/abs/x.yaml'), '/srv/sweeps').file).toBe('/abs/x.yaml');
    expect(thrown(() => resolveProblemSource(problemSource('/etc/passwd'), undefined)).message).toBe(
      '"/etc/passwd" is not a shipped problem id; send the problem inline or name one of GET /v1/problems',
    );
    expect(resolveProblemSource(problemSource({ id: 'x' }), undefined)).toEqual({ inline: { id: 'x' }, shown: 'inline problem' });
  });
});

describe('a file taken from problems/', () => {
  // root/problems: a.yaml, inner.yaml -> a.yaml, out.yaml -> ../outside.yaml, traces -> ../elsewhere
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'servesim-source-')));
  const dir = join(root, 'problems');
  mkdirSync(dir);
  mkdirSync(join(root, 'elsewhere'));
  writeFileSync(join(dir, 'a.yaml'), 'id: a\n');
  writeFileSync(join(root, 'outside.yaml'), 'id: outside\n');
  writeFileSync(join(root, 'elsewhere', 'x.jsonl'), '{}\n');
  symlinkSync('a.yaml', join(dir, 'inner.yaml'));
  symlinkSync('../outside.yaml', join(dir, 'out.yaml'));
  symlinkSync('../elsewhere', join(dir, 'traces'));
  // the folder itself reached through a symlink, as an installed package may be
  symlinkSync(dir, join(root, 'linked'));

  it('is read at its real path when that is inside problems/', () => {
    expect(fileInProblems('a.yaml', dir)).toBe(join(dir, 'a.yaml'));
    expect(fileInProblems('inner.yaml', dir)).toBe(join(dir, 'a.yaml'));
    expect(fileInProblems('a.yaml', join(root, 'linked'))).toBe(join(dir, 'a.yaml'));
    // one that does not exist is left for its reader to refuse
    expect(fileInProblems('traces2/none.jsonl', dir)).toBe(join(dir, 'traces2', 'none.jsonl'));
  });

  it('is refused when a symlink or .. leads out of problems/', () => {
    expect(fileInProblems('out.yaml', dir)).toBeUndefined();
    expect(fileInProblems('traces/x.jsonl', dir)).toBeUndefined();
    expect(fileInProblems('../outside.yaml', dir)).toBeUndefined();
    expect(fileInProblems('.', dir)).toBeUndefined();
  });

  it('lists and resolves as shipped only the ids whose file stays inside', () => {
    expect(shippedProblemIds(dir)).toEqual(['a', 'inner']);
    expect(shippedProblemFile('inner', dir)).toBe(join(dir, 'a.yaml'));
    expect(thrown(() => shippedProblemFile('out', dir)).message).toBe('no shipped problem "out"; known: a, inner');
  });
});
