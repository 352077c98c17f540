/**
 * The bounds on a sweep's size that the CLI's options show as defaults: their own module, so
 * that defining the commands loads neither zod nor the problem parser (spec.ts re-exports them).
 */

/** Refuse sweeps larger than this many instances (grid points x cases x seeds) by default. */
export const DEFAULT_MAX_INSTANCES = 2_000_000;
/**
 * Seeds per case and grid point: a case's result records, ~7 KB a seed (the latency
 * histogram), are all held, and copied once decoded, while it is summarized: ~140 MB here.
 */
export const MAX_SEEDS = 10_000;
/**
 * Rows of a per-seed table (`--seeds-out`: grid points x cases x seeds, with `--seeds auto` x
 * the cap): every row is held until the sweep ends, then encoded whole, which at the instance
 * limit would take over a gigabyte.
 */
export const MAX_SEED_ROWS = 1_000_000;
