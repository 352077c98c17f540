/**
 * The bounds on per-request records (`--requests-out`): their own module, so that the CLI's
 * options can check them without loading the engines.
 */

/**
 * Seeds a case records (`--requests-seeds`): each runs again on the reference engine on the
 * main thread, a few seconds of CPU at the most an instance may simulate (LIMITS.maxArrivals).
 */
export const MAX_REQUEST_SEEDS = 16;
/**
 * Rows of a per-request table: every row is held as an object until the run ends, then
 * encoded whole, as the per-seed table's limit (MAX_SEED_ROWS). A seed's rows are known only
 * once it ran: the run stops with an error when its rows pass this.
 */
export const MAX_REQUEST_ROWS = 1_000_000;
