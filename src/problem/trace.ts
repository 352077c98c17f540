/**
 * Request traces (docs/model.md section 2) read into a Trace: the Mooncake format (JSONL, one
 * request a line, with the hash ids of its prompt's 512-token blocks) and the Azure LLM
 * inference trace (CSV, no hash ids). The hash ids give the radix tree of the prompts' full
 * blocks and what an infinite block cache would find of each prompt, both from a trie built in
 * one pass. A file is parsed once for as long as its path, size and modification time stay the
 * same, so a sweep that builds its problem per grid point reads it once.
 *
 * Messages name the file as the problem wrote it (never its absolute path: a server's errors
 * must not describe its disk), the line, the field and the reason.
 */
import { statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import { ServesimError } from '../errors.js';
import { TRACE_BLOCK_TOKENS, type Trace, type TraceFormat, type TraceTree } from '../model/trace.js';
import { readInputBytes } from './input-file.js';
import { LIMITS } from './limits.js';

/** The problem field every trace error is about. */
export const TRACE_FIELD = 'traffic.trace';

/** The largest hash id: ids are u32, 0xffffffff left unused. */
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

/** A Uint32Array that doubles as values are pushed. */
class U32List {
  a: Uint32Array;
  n = 0;
  constructor(capacity: number) {
    this.a = new Uint32Array(Math.max(16, capacity));
  }
  push(x: number): void {
    if (this.n === this.a.length) {
      const b = new Uint32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = x;
  }
  /** The values pushed, as an array of exactly that length. */
  done(): Uint32Array {
    return this.n === this.a.length ? this.a : this.a.slice(0, this.n);
  }
}

/**
 * The trie of every request's full blocks, one node a block, node 0 the root (the empty
 * prompt); compressed into the Trace's radix tree once the file is read. Kept in typed arrays:
 * a node's first child inline (a conversation's blocks follow one another, so most nodes have
 * one), later children in a Map of the node's own, whose insertion order keeps the order the
 * children were first seen in.
 */
class BlockTrie {
  private n = 1;
  private firstId = new Uint32Array(1024);
  private firstChild = new Int32Array(1024).fill(-1);
  private kids = new Uint32Array(1024);
  /** Whether a request's full blocks end at the node. */
  private ends = new Uint8Array(1024);
  private readonly more = new Map<number, Map<number, number>>();

  private child(node: number, id: number): number {
    const first = this.firstChild[node]!;
    if (first < 0) return -1;
    if (this.firstId[node] === id) return first;
    return this.kids[node]! > 1 ? (this.more.get(node)!.get(id) ?? -1) : -1;
  }

  private addChild(node: number, id: number): number {
    if (this.n === this.firstChild.length) this.grow();
    const c = this.n++;
    if (this.firstChild[node]! < 0) {
      this.firstChild[node] = c;
      this.firstId[node] = id;
    } else {
      let m = this.more.get(node);
      if (m === undefined) this.more.set(node, (m = new Map()));
      m.set(id, c);
    }
    this.kids[node]!++;
    return c;
  }

  private grow(): void {
    const size = this.firstChild.length * 2;
    const firstId = new Uint32Array(size);
    firstId.set(this.firstId);
    const firstChild = new Int32Array(size).fill(-1);
    firstChild.set(this.firstChild);
    const kids = new Uint32Array(size);
    kids.set(this.kids);
    const ends = new Uint8Array(size);
    ends.set(this.ends);
    this.firstId = firstId;
    this.firstChild = firstChild;
    this.kids = kids;
    this.ends = ends;
  }

  /** The trie node the last request added ends at (0, the root, for one without a full block). */
  end = 0;

  /**
   * Adds a request's full blocks, `ids[from]` up to `ids[from + full]`, and sets `end`.
   * Returns how many of its leading full blocks some earlier request also began with: the
   * walk down the trie as it stood before.
   */
  add(ids: Uint32Array, from: number, full: number): number {
    let node = 0;
    let d = 0;
    for (; d < full; d++) {
      const next = this.child(node, ids[from + d]!);
      if (next < 0) break;
      node = next;
    }
    const matched = d;
    for (; d < full; d++) node = this.addChild(node, ids[from + d]!);
    if (full > 0) this.ends[node] = 1;
    this.end = node;
    return matched;
  }

  /**
   * The radix tree: each maximal chain of trie nodes that breaks after a node where a request
   * ends or that has other than one child is a node, numbered in preorder (children in the
   * order they were first seen). `ends` (trie nodes) become the tree nodes they end, in place.
   */
  compress(ends: Int32Array): TraceTree {
    const cap = this.n - 1;
    const parent = new Int32Array(cap);
    const tokens = new Uint32Array(cap);
    const depth = new Uint32Array(cap);
    const nodeOf = new Int32Array(this.n).fill(-1);
    const stackTrie = new Int32Array(Math.max(1, cap));
    const stackParent = new Int32Array(Math.max(1, cap));
    let top = 0;
    const pushChildren = (t: number, p: number): void => {
      const k = this.kids[t]!;
      if (k === 0) return;
      // pushed last first, so the first-seen child is taken (and numbered) first
      if (k > 1) {
        const later = [...this.more.get(t)!.values()];
        for (let j = later.length - 1; j >= 0; j--) {
          stackTrie[top] = later[j]!;
          stackParent[top++] = p;
        }
      }
      stackTrie[top] = this.firstChild[t]!;
      stackParent[top++] = p;
    };
    pushChildren(0, -1);
    let nodes = 0;
    while (top > 0) {
      const start = stackTrie[--top]!;
      const p = stackParent[top]!;
      let e = start;
      let blocks = 1;
      while (this.ends[e] === 0 && this.kids[e] === 1) {
        e = this.firstChild[e]!;
        blocks++;
      }
      const u = nodes++;
      parent[u] = p;
      tokens[u] = blocks * TRACE_BLOCK_TOKENS;
      depth[u] = (p < 0 ? 0 : depth[p]!) + tokens[u]!;
      nodeOf[e] = u;
      pushChildren(e, u);
    }
    // preorder: a node's subtree is the nodes after it up to its end; sizes summed bottom up
    const end = new Uint32Array(nodes);
    for (let u = nodes - 1; u >= 0; u--) {
      end[u] = end[u]! + u + 1;
      const p = parent[u]!;
      if (p >= 0) end[p] = end[p]! + (end[u]! - u);
    }
    for (let i = 0; i < ends.length; i++) ends[i] = ends[i] === 0 ? -1 : nodeOf[ends[i]!]!;
    const fit = <T extends Int32Array | Uint32Array>(a: T): T => (a.length === nodes ? a : (a.slice(0, nodes) as T));
    return { nodes, parent: fit(parent), end, tokens: fit(tokens), depth: fit(depth) };
  }
}

/** The radix tree of a trace without hash ids. */
function emptyTree(): TraceTree {
  return { nodes: 0, parent: new Int32Array(0), end: new Uint32Array(0), tokens: new Uint32Array(0), depth: new Uint32Array(0) };
}

/** Columns of the typed arrays, grown as lines are read. */
class Columns {
  at: Float64Array;
  input: Uint32Array;
  output: Uint32Array;
  /** The trie node each request's full blocks end at while reading; its tree node after. */
  node: Int32Array;
  reusable: Uint32Array;
  readonly ids: U32List;
  idsStart: Uint32Array;
  n = 0;

  constructor(capacity: number, ids = 0) {
    const c = Math.max(1, capacity);
    this.at = new Float64Array(c);
    this.input = new Uint32Array(c);
    this.output = new Uint32Array(c);
    this.node = new Int32Array(c);
    this.reusable = new Uint32Array(c);
    this.ids = new U32List(ids);
    this.idsStart = new Uint32Array(c + 1);
  }

  /** A trace of exactly the rows read (copies only when lines were blank). */
  trace(file: string, format: TraceFormat, tree: TraceTree): Trace {
    const fit = <T extends Float64Array | Uint32Array | Int32Array>(a: T, n = this.n): T => (a.length === n ? a : (a.slice(0, n) as T));
    return {
      file,
      format,
      requests: this.n,
      at: fit(this.at),
      input: fit(this.input),
      output: fit(this.output),
      node: fit(this.node),
      tree,
      ids: this.ids.done(),
      idsStart: fit(this.idsStart, this.n + 1),
      reusable: fit(this.reusable),
    };
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
  // ids take 3 characters at least: room for most files without growing, bounded for large ones
  const cols = new Columns(lineCount(text), Math.min(text.length >> 3, 1 << 22));
  const trie = new BlockTrie();
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
    // without hash ids (none given, or null) the request replays as a prompt of its own
    const ids = r['hash_ids'] ?? [];
    if (!Array.isArray(ids)) throw invalid(file, n, `hash_ids must be a list of block ids, or left out (got ${shown(ids)})`);
    const from = cols.ids.n;
    for (let k = 0; k < ids.length; k++) {
      const id: unknown = ids[k];
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_HASH_ID) {
        throw invalid(file, n, `hash_ids[${k}] must be a whole number from 0 to ${MAX_HASH_ID} (got ${shown(id)})`);
      }
      cols.ids.push(id);
    }
    checkOrder(file, n, 'timestamp', micros, previous?.micros, `${ts}`, previous?.shown ?? '');
    previous = { micros, shown: `${ts}` };
    const i = cols.n++;
    if (i === 0) first = micros;
    const input = r['input_length'] as number;
    cols.at[i] = micros - first;
    cols.input[i] = input;
    cols.output[i] = r['output_length'] as number;
    cols.idsStart[i + 1] = cols.ids.n;
    // the partial last block is never cached: only full blocks join the tree
    const full = Math.min(ids.length, Math.floor(input / TRACE_BLOCK_TOKENS));
    const matched = trie.add(cols.ids.a, from, full);
    cols.node[i] = trie.end;
    cols.reusable[i] = Math.min(matched * TRACE_BLOCK_TOKENS, input - 1);
  }
  if (cols.n === 0) throw invalid(file, undefined, 'the trace is empty: no requests');
  return cols.trace(file, 'mooncake', trie.compress(cols.node));
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
  // setUTCFullYear reads a year as written: Date.UTC takes 0-99 for 1900-1999
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const epochDays = date.getTime() / 86_400_000;
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
    cols.node[i] = -1;
  }
  if (header === undefined) throw invalid(file, undefined, `the trace is empty: no header line (${AZURE_COLUMNS.join(',')}) and no requests`);
  if (cols.n === 0) throw invalid(file, undefined, 'the trace is empty: a header and no requests');
  return cols.trace(file, 'azure', emptyTree());
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
