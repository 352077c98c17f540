/**
 * The problems shipped in problems/, read once: what GET /v1/problems lists, each problem as its
 * file states it (which a request may send back inline, changed or not) and as servesim reads
 * it, and the ids a request may name instead of sending a problem inline.
 */
import { invalidProblem } from '../errors.js';
import { goalsInMilliseconds, type GoalsInMilliseconds, type Problem, type Traffic } from '../model/problem.js';
import { traceListing, type TraceListing } from '../model/trace.js';
import { problemFromObject, readInputFile, readYaml } from '../problem/parse.js';
import { noShippedProblem, shippedProblemFile, shippedProblemIds } from '../problem/source.js';
import { ServiceError } from './errors.js';

export interface ProblemListing {
  readonly id: string;
  readonly title: string;
  readonly goals: GoalsInMilliseconds;
  readonly confidence: number;
  readonly cases: readonly string[];
  readonly links: { readonly self: string };
}

/** The typed problem; a trace as what it is (file, format, requests, span), not its rows. */
export type ResolvedProblem = Omit<Problem, 'traffic'> & { traffic: Omit<Traffic, 'trace'> & { trace: TraceListing | null } };

interface ShippedProblem {
  /** The file's YAML document, as JSON: what a sweep or hint takes as its inline `problem`. */
  readonly document: unknown;
  readonly problem: Problem;
}

export class ProblemCatalog {
  private loaded: ReadonlyMap<string, ShippedProblem> | undefined;

  private problems(): ReadonlyMap<string, ShippedProblem> {
    // the ids a sweep's `problem: <id>` resolves (problem/source.ts)
    this.loaded ??= new Map(shippedProblemIds().map((id) => [id, readShipped(id)]));
    return this.loaded;
  }

  ids(): string[] {
    return [...this.problems().keys()];
  }

  list(): ProblemListing[] {
    return [...this.problems()].map(([id, { problem: p }]) => ({
      id,
      title: p.title,
      goals: goalsInMilliseconds(p.goals),
      confidence: p.confidence,
      cases: p.cases.map((c) => c.name),
      links: { self: `/v1/problems/${id}` },
    }));
  }

  private shipped(id: string): ShippedProblem {
    const found = this.problems().get(id);
    if (found === undefined) throw new ServiceError('SERVESIM_NOT_FOUND', 404, noShippedProblem(id, this.ids()));
    return found;
  }

  /** The problem as its file states it: units as written, absent sections absent. */
  get(id: string): unknown {
    return this.shipped(id).document;
  }

  /** The problem as servesim reads it: every default filled in, times in microseconds. */
  resolved(id: string): ResolvedProblem {
    const { problem } = this.shipped(id);
    const { trace } = problem.traffic;
    return { ...problem, traffic: { ...problem.traffic, trace: trace === null ? null : traceListing(trace) } };
  }
}

/**
 * A shipped problem's document, and the problem read from it as an inline problem is (its trace
 * looked for in problems/), so that what GET /v1/problems/:id answers is the problem the id names.
 */
function readShipped(id: string): ShippedProblem {
  const shown = `${id}.yaml`;
  const { value } = readYaml(readInputFile(shippedProblemFile(id), 'problem file', shown), shown, (issues) => invalidProblem(issues, shown));
  return { document: value, problem: problemFromObject(value, [], shown) };
}
