/**
 * A sweep cut into chunks of grid points, one BullMQ job each, and what travels: the job's
 * payload (everything a worker needs; it reads no files) and its return value (the CaseSummary
 * rows of each point, numbers encoded so that the table assembled from them equals a local
 * run's bit for bit).
 */
import { packageVersion } from '../version.js';
import type { CaseSummary } from '../model/summary.js';
import type { OverrideInput } from '../problem/overrides.js';
import type { BatchUsed } from '../run/batches.js';
import { sweepFromObject, type Sweep, type SweepFile } from '../sweep/spec.js';

/**
 * Instances (points x cases x seeds) a chunk aims at when the service is not told a chunk
 * size: on the CPU pool of a 2-core machine about 1-2 s of work, long enough that the queue's
 * cost per chunk is small beside it (bench/results/queue.md).
 */
export const CHUNK_INSTANCES = 256;
/** The default never makes fewer chunks than this (when there are as many points), so that
 * several workers get a share of a small sweep. */
export const MIN_CHUNKS = 8;

/** What a worker runs: the sweep's problem as raw input, some of its points, and the seeds. */
export interface ChunkData {
  /** The service's job id: the chunk's sweep record is `sweepKey(job)`. */
  readonly job: string;
  readonly chunk: number;
  /** The service's servesim: another version might not give the same numbers. */
  readonly version: string;
  readonly problem: unknown;
  /** Where the problem came from, for error messages. */
  readonly source: string;
  readonly confidence: number;
  readonly cases: readonly string[];
  readonly seeds: number;
  readonly maxSeeds: number;
  readonly baseSeed: number;
  /** Each point's overrides, parsed (GridPoint.overrides): JSON carries them as they are. */
  readonly points: readonly { readonly index: number; readonly overrides: readonly OverrideInput[] }[];
}

/** A number JSON cannot carry as it is: Infinity, -Infinity, NaN or -0, as text. */
interface EncodedNumber {
  readonly $n: string;
}

export type EncodedSummary = Record<string, string | number | boolean | EncodedNumber>;

export interface ChunkResult {
  /** The points finished, in the chunk's order, with one row per case. */
  readonly points: readonly { readonly index: number; readonly rows: readonly EncodedSummary[] }[];
  /** The batches the worker ran them as. */
  readonly batches: readonly BatchUsed[];
  /** Why the chunk stopped early (a servesim error: retrying would not help). */
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** Points per chunk when the service is not told: about CHUNK_INSTANCES each. */
export function defaultChunkSize(sweep: Sweep): number {
  const perPoint = sweep.caseNames.length * sweep.seeds;
  const bySize = Math.ceil(CHUNK_INSTANCES / perPoint);
  const bySpread = Math.ceil(sweep.points.length / MIN_CHUNKS);
  return Math.max(1, Math.min(bySize, bySpread));
}

/** Chunk `c` holds points `c * size ..` in the grid's order. */
export function chunkIndexes(sweep: Sweep, size: number): number[][] {
  const chunks: number[][] = [];
  for (let first = 0; first < sweep.points.length; first += size) {
    chunks.push(sweep.points.slice(first, first + size).map((p) => p.index));
  }
  return chunks;
}

/** BullMQ job ids may not contain ':'; a uuid has no '.'. */
export function chunkJobId(job: string, chunk: number): string {
  return `${job}.${chunk}`;
}

export function parseChunkJobId(id: string): { job: string; chunk: number } | null {
  const dot = id.lastIndexOf('.');
  if (dot <= 0) return null;
  const chunk = Number(id.slice(dot + 1));
  return Number.isInteger(chunk) && chunk >= 0 ? { job: id.slice(0, dot), chunk } : null;
}

export function chunkData(job: string, sweep: Sweep, chunk: number, indexes: readonly number[]): ChunkData {
  return {
    job,
    chunk,
    version: packageVersion(),
    problem: sweep.problemRaw,
    source: sweep.problemSource,
    confidence: sweep.confidence,
    cases: sweep.caseNames,
    seeds: sweep.seeds,
    maxSeeds: sweep.maxSeeds,
    baseSeed: sweep.baseSeed,
    points: indexes.map((i) => ({ index: i, overrides: sweep.points[i]!.overrides })),
  };
}

function encodeNumber(v: number): number | EncodedNumber {
  if (Object.is(v, -0)) return { $n: '-0' };
  return Number.isFinite(v) ? v : { $n: String(v) };
}

/** JSON keeps finite doubles exactly (shortest round-trip form); the rest go as text. */
export function encodeSummary(summary: CaseSummary): EncodedSummary {
  const out: EncodedSummary = {};
  for (const [key, value] of Object.entries(summary) as [string, unknown][]) {
    out[key] = typeof value === 'number' ? encodeNumber(value) : (value as string | boolean);
  }
  return out;
}

export function decodeSummary(encoded: EncodedSummary): CaseSummary {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(encoded)) {
    out[key] = typeof value === 'object' && value !== null ? Number(value.$n) : value;
  }
  return out as unknown as CaseSummary;
}

/**
 * The sweep as a sweep file that parses back to the same grid, cases and seeds: what the
 * service keeps in Redis so that a new service process can take the job up.
 */
export function sweepToFile(sweep: Sweep): SweepFile {
  return {
    // absent, both default to the problem's again; given, they passed the schema once already
    ...(sweep.id === sweep.problem.id ? {} : { id: sweep.id }),
    ...(sweep.title === sweep.problem.title ? {} : { title: sweep.title }),
    problem: sweep.problemRaw as Record<string, unknown>,
    grid: Object.fromEntries(sweep.axes.map((a) => [a.path, [...a.values]])),
    cases: [...sweep.caseNames],
    seeds: sweep.seeds,
    maxSeeds: sweep.maxSeeds,
    seed: sweep.baseSeed,
    confidence: sweep.confidence,
    engine: sweep.engine,
  };
}

export function sweepFromFile(file: SweepFile): Sweep {
  // it was taken once: the service's instance limit has been applied
  return sweepFromObject(file, { maxInstances: Number.POSITIVE_INFINITY });
}
