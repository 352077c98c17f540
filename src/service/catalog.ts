/**
 * The problems shipped in problems/, read once: what GET /v1/problems lists, and the ids a
 * request may name instead of sending a problem inline.
 */
import { goalsInMilliseconds, type GoalsInMilliseconds, type Problem, type Traffic } from '../model/problem.js';
import { traceListing, type TraceListing } from '../model/trace.js';
import { loadProblem } from '../problem/parse.js';
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

export class ProblemCatalog {
  private loaded: ReadonlyMap<string, Problem> | undefined;

  private problems(): ReadonlyMap<string, Problem> {
    // the ids a sweep's `problem: <id>` resolves (problem/source.ts)
    this.loaded ??= new Map(shippedProblemIds().map((id) => [id, loadProblem(shippedProblemFile(id))]));
    return this.loaded;
  }

  ids(): string[] {
    return [...this.problems().keys()];
  }

  list(): ProblemListing[] {
    return [...this.problems()].map(([id, p]) => ({
      id,
      title: p.title,
      goals: goalsInMilliseconds(p.goals),
      confidence: p.confidence,
      cases: p.cases.map((c) => c.name),
      links: { self: `/v1/problems/${id}` },
    }));
  }

  /** The typed problem; a trace as what it is (file, format, requests, span), not its rows. */
  get(id: string): Omit<Problem, 'traffic'> & { traffic: Omit<Traffic, 'trace'> & { trace: TraceListing | null } } {
    const problem = this.problems().get(id);
    if (problem === undefined) {
      throw new ServiceError('SERVESIM_NOT_FOUND', 404, noShippedProblem(id, this.ids()));
    }
    const { trace } = problem.traffic;
    return { ...problem, traffic: { ...problem.traffic, trace: trace === null ? null : traceListing(trace) } };
  }
}
