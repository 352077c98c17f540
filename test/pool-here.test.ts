/**
 * A pool of one thread run on the calling thread (PoolOptions.here, what `servesim run` and the
 * other one-shot commands use): the reference engine's records, bit for bit, in batches as the
 * worker pool gives them; the event loop gets its turns while a slice runs; a cancel or a close
 * ends the run with an error, never with records it did not compute.
 */
import { describe, expect, it } from 'vitest';
import { singleRun } from '../src/engine/batch.js';
import { runReference } from '../src/engine/reference.js';
import { SimulationPool } from '../src/pool/pool.js';
import { configFor } from './support.js';

// a few milliseconds an instance: a slice of them outlasts the pool's turn on the event loop
const SETS = ['server.slots=8', 'traffic.rate=24', 'traffic.duration=300s'];

describe('a one-thread pool on this thread', () => {
  it('gives the reference engine\'s records, across slices and runs', async () => {
    const { config } = configFor('mmc', SETS);
    const other = configFor('mmc', ['traffic.duration=20s']).config;
    const pool = new SimulationPool(1, { here: true });
    try {
      expect(await pool.run(config, 3, 5, 30)).toEqual(runReference(config, 3, 5, 30));
      const batch = { configs: [config, other], runs: [{ config: 1, seed: 1, first: 0, count: 9 }, { config: 0, seed: 2, first: 4, count: 3 }] };
      const [a, b] = await pool.runBatch(batch);
      expect(a).toEqual(runReference(other, 1, 0, 9));
      expect(b).toEqual(runReference(config, 2, 4, 3));
    } finally {
      await pool.close();
    }
  });

  it('lets the event loop turn while a slice runs', async () => {
    const { config } = configFor('mmc', SETS);
    const pool = new SimulationPool(1, { here: true });
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    try {
      await pool.run(config, 1, 0, 40);
    } finally {
      clearInterval(timer);
      await pool.close();
    }
    expect(turns).toBeGreaterThan(1);
  });

  it('stops at a cancel, and a close fails the run rather than returning empty records', async () => {
    const { config } = configFor('mmc', SETS);
    const pool = new SimulationPool(1, { here: true });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 5);
    await expect(pool.runBatch(singleRun(config, 1, 0, 200), { signal: stop.signal })).rejects.toMatchObject({ code: 'SERVESIM_CANCELLED' });
    const running = pool.run(config, 1, 0, 200);
    setTimeout(() => void pool.close(), 5);
    await expect(running).rejects.toMatchObject({ code: 'SERVESIM_CANCELLED' });
  });
});
