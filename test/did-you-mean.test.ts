// "did you mean" (src/problem/issues.ts closest): a guess within a third of the word in edits,
// and a cost that does not grow with an attacker's word (issue 30: a 1,000,000-character
// gpu.profile held the service's event loop for 87 s).
import { describe, expect, it } from 'vitest';
import { closest } from '../src/problem/issues.js';
import { closeProfiles, profileCatalogue } from '../src/problem/profiles.js';

describe('closest', () => {
  it('guesses a misspelt name within a third of its length in edits, and nothing further off', () => {
    expect(closest('kvTokenz', ['replicas', 'slots', 'kvTokens', 'profile'])).toBe('kvTokens');
    expect(closest('routers', ['router', 'gpu'])).toBe('router');
    expect(closest('xyz', ['router', 'gpu'])).toBeUndefined();
  });

  it('skips unmeasured every candidate too short to be near a long word: the same answer, without the work', () => {
    const ids = profileCatalogue().profiles.map((p) => p.id);
    const long = 'x'.repeat(1_000_000);
    expect(closest(long, ids)).toBeUndefined();
    expect(closeProfiles(long)).toEqual([]);
    // a word just past an id's reach: a length difference alone rules the id out
    expect(closest(`${ids[0]!}${'q'.repeat(ids[0]!.length)}`, [ids[0]!])).toBeUndefined();
  });
});
