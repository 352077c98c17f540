/**
 * Request traces (docs/model.md section 2) read into a Trace: the Mooncake format (JSONL, one
 * request a line, with the hash ids of its prompt's 512-token blocks) and the Azure LLM
 * inference trace (CSV, no hash ids). Each request's parent and shared prefix come from the
 * hash ids, found with a trie in one pass. A file is parsed once for as long as its path, size
 * and modification time stay the same, so a sweep that builds its problem per grid point reads
 * it once.
 *
 * Messages name the file as the problem wrote it (never its absolute path: a server's errors
 * must not describe its disk), the line, the field and the reason.
 */
import { statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import { ServesimError } from '../errors.js';
import { TRACE_BLOCK_TOKENS, type Trace, type TraceFormat } from '../model/trace.js';
import { LIMITS } from './limits.js';
import { readInputBytes } from './parse.js';

/** The problem field every trace error is about. */
export const TRACE_FIELD = 'traffic.trace';

/** The largest hash id: its routeKey (id + 1) must fit a u32. */
const MAX_HASH_ID = 0xffff_fffe;

/** A trace's format from its file name: `.jsonl` Mooncake, `.csv` Azure; undefined for any other. */
export function traceFormatOf(path: string): TraceFormat | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.jsonl')) return 'mooncake';
  if (lower.endsWith('.csv')) return 'azure';
  return undefined;
}

/** A trace the problem cannot use: SERVESIM_PROBLEM_INVALID on traffic.trace, naming the file and the line. */
function invalid(file: string, line: number | undefined, message: string): ServesimError {
  return new ServesimError('SERVESIM_PROBLEM_INVALID', `${file}${line === undefined ? '' : ` line ${line}`}: ${message}`, TRACE_FIELD);
}

/** How a value reads in a message: short, strings quoted. */
function shown(x: unknown): string {
  if (x === undefined) return 'nothing';
  if (typeof x === 'string') return JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x);
  if (Array.isArray(x)) return 'a list';
  if (typeof x === 'object' && x !== null) return 'a mapping';
  return String(x);
}

/** Columns of the typed arrays, grown as lines are read. */
class Columns {
  at: Float64Array;
  input: Uint32Array;
  output: Uint32Array;
  parent: Int32Array;
  shared: Uint32Array;
  routeKey: Uint32Array;
  n = 0;

  constructor(capacity: number) {
    const c = Math.max(1, capacity);
    this.at = new Float64Array(c);
    this.input = new Uint32Array(c);
    this.output = new Uint32Array(c);
    this.parent = new Int32Array(c);
    this.shared = new Uint32Array(c);
    this.routeKey = new Uint32Array(c);
  }

  /** A trace of exactly the rows read (copies only when lines were blank). */
  trace(file: string, format: TraceFormat): Trace {
    const fit = <T extends Float64Array | Uint32Array | Int32Array>(a: T): T => (a.length === this.n ? a : (a.slice(0, this.n) as T));
    return {
      file,
      format,
      requests: this.n,
      at: fit(this.at),
      input: fit(this.input),
      output: fit(this.output),
      parent: fit(this.parent),
      shared: fit(this.shared),
      routeKey: fit(this.routeKey),
    };
  }
}

/**
 * One node of the hash-id trie: the latest request whose whole full blocks end at it, and its
 * children by id. Most nodes have one child (a conversation's blocks follow one another), held
 * inline; a Map only once a second one comes.
 */
class TrieNode {
  ending = -1;
  key = -1;
  child: TrieNode | null = null;
  more: Map<number, TrieNode> | null = null;

  get(id: number): TrieNode | undefined {
    if (this.key === id) return this.child!;
    return this.more?.get(id);
  }

  add(id: number): TrieNode {
    const node = new TrieNode();
    if (this.child === null) {
      this.key = id;
      this.child = node;
    } else {
      (this.more ??= new Map()).set(id, node);
    }
    return node;
  }
}

/**
 * Parent, shared prefix and route key of each request, in arrival order. A request's parent is
 * the latest earlier request whose full blocks are all a prefix of its prompt, the deepest
 * such (docs/model.md section 2): the engines cache a prompt under its parent's entry, so a
 * parent must be wholly a prefix of its children's prompts (were it not, a request sharing
 * only a system prompt would pin a chain of unrelated prompts). `add` walks the request's ids
 * down the trie of earlier requests' full blocks, then marks where its own full blocks end.
 */
class PrefixTrie {
  private readonly root = new TrieNode();

  add(cols: Columns, i: number, ids: readonly number[]): void {
    let node = this.root;
    let parent = -1;
    let depth = 0;
    for (let d = 0; d < ids.length; d++) {
      const next = node.get(ids[d]!);
      if (next === undefined) break;
      node = next;
      if (node.ending >= 0) {
        parent = node.ending;
        depth = d + 1;
      }
    }
    cols.parent[i] = parent;
    cols.shared[i] = parent < 0 ? 0 : Math.min(depth * TRACE_BLOCK_TOKENS, cols.input[parent]!, cols.input[i]!);
    cols.routeKey[i] = ids.length === 0 ? 0 : (ids.length >= 2 ? ids[1]! : ids[0]!) + 1;
    const full = Math.min(ids.length, Math.floor(cols.input[i]! / TRACE_BLOCK_TOKENS));
    if (full === 0) return;
    node = this.root;
    for (let d = 0; d < full; d++) node = node.get(ids[d]!) ?? node.add(ids[d]!);
    node.ending = i;
  }
}

/** Each non-blank line of the text with its 1-based number, without copying the text into a list. */
function* lines(text: string): Generator<{ line: string; n: number }> {
  let start = 0;
  let n = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    n++;
    let line = text.slice(start, text.charCodeAt(end - 1) === 13 && end > start ? end - 1 : end);
    if (n === 1 && line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    start = end + 1;
    if (line.trim() !== '') yield { line, n };
  }
}

/** Newlines in the text, plus one: how many requests it can hold at most. */
function lineCount(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** A token count: a whole number from 1 to LIMITS.tokens, else the reason. */
function tokensProblem(x: unknown): string | undefined {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) return `must be a whole number of at least 1 (got ${shown(x)})`;
  if (x > LIMITS.tokens) return `must be at most ${LIMITS.tokens} (token counts; got ${x})`;
  return undefined;
}

/** Arrivals in order: a time before the previous request's is refused, naming both. */
function checkOrder(file: string, n: number, field: string, micros: number, previous: number | undefined, shownTime: string, shownPrevious: string): void {
  if (previous !== undefined && micros < previous) {
    throw invalid(file, n, `${field} ${shownTime} is before the previous request's (${shownPrevious}): a trace's requests must be in time order`);
  }
}

function parseMooncake(text: string, file: string): Trace {
  const cols = new Columns(lineCount(text));
  const trie = new PrefixTrie();
  let first = 0;
  let previous: { micros: number; shown: string } | undefined;
  for (const { line, n } of lines(text)) {
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (err) {
      throw invalid(file, n, `not JSON (${(err as Error).message}); a Mooncake trace has one JSON object a line`);
    }
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw invalid(file, n, `must be a JSON object {timestamp, input_length, output_length, hash_ids} (got ${shown(row)})`);
    }
    const r = row as Record<string, unknown>;
    const ts = r['timestamp'];
    if (typeof ts !== 'number' || !Number.isFinite(ts) || ts < 0) {
      throw invalid(file, n, `timestamp must be milliseconds since the trace's start, 0 or more (got ${shown(ts)})`);
    }
    const micros = Math.round(ts * 1000);
    if (!Number.isSafeInteger(micros)) throw invalid(file, n, `timestamp must be at most ${Math.floor(Number.MAX_SAFE_INTEGER / 1000)} milliseconds (got ${ts})`);
    for (const field of ['input_length', 'output_length'] as const) {
      const why = tokensProblem(r[field]);
      if (why !== undefined) throw invalid(file, n, `${field} ${why}`);
    }
    const ids = r['hash_ids'];
    if (!Array.isArray(ids)) throw invalid(file, n, `hash_ids must be a list of block ids (got ${shown(ids)})`);
    for (let k = 0; k < ids.length; k++) {
      const id: unknown = ids[k];
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_HASH_ID) {
        throw invalid(file, n, `hash_ids[${k}] must be a whole number from 0 to ${MAX_HASH_ID} (got ${shown(id)})`);
      }
    }
    checkOrder(file, n, 'timestamp', micros, previous?.micros, `${ts}`, previous?.shown ?? '');
    previous = { micros, shown: `${ts}` };
    const i = cols.n++;
    if (i === 0) first = micros;
    cols.at[i] = micros - first;
    cols.input[i] = r['input_length'] as number;
    cols.output[i] = r['output_length'] as number;
    trie.add(cols, i, ids as number[]);
  }
  if (cols.n === 0) throw invalid(file, undefined, 'the trace is empty: no requests');
  return cols.trace(file, 'mooncake');
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z?$/;

/**
 * An Azure TIMESTAMP (`2023-11-16 18:15:46.6805900`, read as UTC) as whole microseconds since
 * 1970, the fraction rounded to the microsecond; undefined when it is no such datetime. Summed
 * in integers, so the seventh digit is never lost to a float.
 */
export function parseAzureTimestamp(text: string): number | undefined {
  const m = DATETIME.exec(text.trim());
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (days === undefined || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) return undefined;
  const epochDays = Date.UTC(year, month - 1, day) / 86_400_000;
  // nanoseconds of the fraction, rounded to microseconds
  const fraction = Math.round(Number((m[7] ?? '').padEnd(9, '0')) / 1000);
  return (epochDays * 86_400 + hour * 3_600 + minute * 60 + second) * 1_000_000 + fraction;
}

/** The columns an Azure trace must have; any others are ignored. */
const AZURE_COLUMNS = ['TIMESTAMP', 'ContextTokens', 'GeneratedTokens'] as const;

/** A CSV line's fields, with double quotes around a field removed (the Azure files quote nothing). */
function csvFields(line: string): string[] {
  return line.split(',').map((f) => {
    const t = f.trim();
    return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
  });
}

function parseAzure(text: string, file: string): Trace {
  const cols = new Columns(lineCount(text) - 1);
  let header: number[] | undefined;
  let first = 0;
  let previous: { micros: number; shown: string } | undefined;
  for (const { line, n } of lines(text)) {
    const fields = csvFields(line);
    if (header === undefined) {
      header = AZURE_COLUMNS.map((name) => {
        const at = fields.indexOf(name);
        if (at < 0) {
          throw invalid(file, n, `the header has no column ${name}; an Azure trace's header names ${AZURE_COLUMNS.join(', ')} (got ${fields.join(', ')})`);
        }
        return at;
      });
      continue;
    }
    const [tCol, inCol, outCol] = header as [number, number, number];
    const value = (col: number, name: string): string => {
      const v = fields[col];
      if (v === undefined || v === '') throw invalid(file, n, `${name} is missing (the line has ${fields.length} fields)`);
      return v;
    };
    const tText = value(tCol, 'TIMESTAMP');
    const micros = parseAzureTimestamp(tText);
    if (micros === undefined) throw invalid(file, n, `TIMESTAMP must be a date and time such as 2023-11-16 18:15:46.6805900 (got ${shown(tText)})`);
    const counts: number[] = [];
    for (const [col, name] of [[inCol, 'ContextTokens'], [outCol, 'GeneratedTokens']] as const) {
      const v = value(col, name);
      const x = /^[0-9]+$/.test(v) ? Number(v) : v;
      const why = tokensProblem(x);
      if (why !== undefined) throw invalid(file, n, `${name} ${why}`);
      counts.push(x as number);
    }
    checkOrder(file, n, 'TIMESTAMP', micros, previous?.micros, tText, previous?.shown ?? '');
    previous = { micros, shown: tText };
    const i = cols.n++;
    if (i === 0) first = micros;
    cols.at[i] = micros - first;
    cols.input[i] = counts[0]!;
    cols.output[i] = counts[1]!;
    cols.parent[i] = -1;
  }
  if (header === undefined) throw invalid(file, undefined, `the trace is empty: no header line (${AZURE_COLUMNS.join(',')}) and no requests`);
  if (cols.n === 0) throw invalid(file, undefined, 'the trace is empty: a header and no requests');
  return cols.trace(file, 'azure');
}

/**
 * A trace from its text (`format` as traceFormatOf gives it from the file name); `file` names it
 * in the Trace and in messages. Throws SERVESIM_PROBLEM_INVALID on traffic.trace naming the
 * line, the field and the reason.
 */
export function parseTrace(text: string, file: string, format: TraceFormat): Trace {
  return format === 'mooncake' ? parseMooncake(text, file) : parseAzure(text, file);
}

// ---------------------------------------------------------------------------------------------
// Reading, once per file version

interface MemoEntry {
  /** The file's version: its size and modification time. */
  readonly size: number;
  readonly mtimeMs: number;
  /** The trace as each name the problems gave it (the arrays are shared). */
  readonly byName: Map<string, Trace>;
}

/** Files kept parsed, the least recently used dropped first: a sweep uses one. */
const MEMO_FILES = 4;
const memo = new Map<string, MemoEntry>();

/**
 * The trace in the file at `path` (`shown`: the path as the problem wrote it, for the Trace and
 * messages), parsed once for as long as the file's path, size and modification time stay the
 * same: the same object again for the same name (its arrays shared: callers read them, never
 * write them). Refused past LIMITS.traceBytes; a file that
 * cannot be read is SERVESIM_FILE_UNREADABLE, one too large SERVESIM_INPUT_TOO_LARGE, both on
 * traffic.trace.
 */
export function loadTrace(path: string, shown: string = path): Trace {
  const format = traceFormatOf(path);
  if (format === undefined) {
    throw invalid(shown, undefined, 'must name a .jsonl file (a Mooncake trace) or a .csv file (an Azure LLM inference trace)');
  }
  const absolute = resolve(path);
  let stat: Stats | undefined;
  try {
    stat = statSync(absolute);
  } catch {
    // readInputBytes says why
  }
  const cached = memo.get(absolute);
  if (cached !== undefined && stat !== undefined && stat.isFile() && cached.size === stat.size && cached.mtimeMs === stat.mtimeMs) {
    memo.delete(absolute);
    memo.set(absolute, cached);
    const named = cached.byName.get(shown);
    if (named !== undefined) return named;
    const any = cached.byName.values().next().value as Trace;
    const renamed: Trace = { ...any, file: shown };
    cached.byName.set(shown, renamed);
    return renamed;
  }
  let text: string;
  try {
    text = readInputBytes(absolute, 'trace file', shown, LIMITS.traceBytes).toString('utf8');
  } catch (err) {
    throw err instanceof ServesimError ? new ServesimError(err.code, err.message, TRACE_FIELD) : err;
  }
  const trace = parseTrace(text, shown, format);
  memo.delete(absolute);
  if (stat !== undefined) {
    memo.set(absolute, { size: stat.size, mtimeMs: stat.mtimeMs, byName: new Map([[shown, trace]]) });
    while (memo.size > MEMO_FILES) memo.delete(memo.keys().next().value as string);
  }
  return trace;
}
