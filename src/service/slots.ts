/**
 * A counting semaphore over the simulation engine: every sweep or hint search holds one slot
 * while it is checked and runs. Requests that wait on an answer only try (and get 429 when none
 * is free, before any work their size asks for); jobs queue, in order, and a freed slot goes
 * to the oldest waiting job first.
 */
import { ServesimError } from '../errors.js';
import { busy } from './errors.js';

export type Release = () => void;

export class Slots {
  readonly size: number;
  private held = 0;
  private readonly waiting: { grant: (release: Release) => void }[] = [];

  constructor(size: number) {
    this.size = Math.max(1, size);
  }

  /** Slots held now. */
  get busy(): number {
    return this.held;
  }

  tryAcquire(): Release | undefined {
    if (this.held >= this.size) return undefined;
    this.held++;
    return this.releaser();
  }

  /** A slot now, for a request that waits on its answer; 429 (come back in `retryAfterSeconds`) when none is free. */
  take(retryAfterSeconds: number): Release {
    const release = this.tryAcquire();
    if (release === undefined) throw busy(`${this.size} sweeps are running, the most this server runs at once`, retryAfterSeconds);
    return release;
  }

  /** Waits for a slot; rejects with SERVESIM_CANCELLED when `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<Release> {
    if (signal.aborted) return Promise.reject(cancelledWhileQueued());
    const now = this.tryAcquire();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: (release: Release) => {
          signal.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(cancelledWhileQueued());
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // the slot passes straight on, so a request that only tries cannot take it from a job
      if (next !== undefined) next.grant(this.releaser());
      else this.held--;
    };
  }
}

function cancelledWhileQueued(): ServesimError {
  return new ServesimError('SERVESIM_CANCELLED', 'cancelled while queued');
}
