/**
 * The results file of `servesim sweep --out`: `.arrow` and `.feather` are the Arrow IPC file
 * format (magic at both ends, a footer), `.arrows` the stream, `.parquet` Parquet; and
 * `servesim report` refuses a file cut short, at a record-batch boundary or in the footer,
 * naming what is missing, and says it reads Arrow only when given Parquet.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from '@uwdata/flechette';
import { RecordBatchFileReader, RecordBatchStreamWriter, tableFromIPC as arrowTable } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { closeEngines } from '../src/run/run.js';
import { TINY_QUEUE } from './support.js';

// a grid point takes milliseconds
const SWEEP = {
  id: 'tiny',
  problem: TINY_QUEUE,
  grid: { 'server.slots': [1, 2, 3, 4], 'traffic.rate': [10, 12.5] },
  seeds: 2,
};
const ROWS = 8;

const unused = (): never => {
  throw new Error('not used by sweep or report');
};

/**
 * `servesim ARGS...` in this process, its stdout a terminal or not; resolves to the exit status
 * and what went to stderr.
 */
async function servesimOn(isTTY: boolean, ...args: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const deps: ProgramDeps = { loadProblem: unused, selectCases: unused, runProblem: unused };
  const io: SweepIo = {
    stdout: { write: () => true, isTTY },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false } as unknown as SweepIo['stderr'],
    onInterrupt: () => () => {},
  };
  const code = await main(['node', 'servesim', ...args], deps, io);
  return { code, err };
}

const servesim = (...args: string[]) => servesimOn(false, ...args);

const dir = mkdtempSync(join(tmpdir(), 'servesim-results-'));
const sweepFile = join(dir, 'tiny.json');
writeFileSync(sweepFile, JSON.stringify(SWEEP));
const MAGIC = Buffer.from('ARROW1');
const PARQUET_MAGIC = Buffer.from('PAR1');

afterAll(closeEngines);

describe('servesim sweep --out', () => {
  it('writes .arrow and .feather as the Arrow IPC file format, .arrows as the stream', async () => {
    for (const name of ['results.arrow', 'results.feather']) {
      const out = join(dir, name);
      expect((await servesim('sweep', sweepFile, '--out', out)).code).toBe(0);
      const bytes = readFileSync(out);
      expect(bytes.subarray(0, 6).equals(MAGIC), name).toBe(true);
      expect(bytes.subarray(-6).equals(MAGIC), name).toBe(true);
      // the footer lists every record batch (one per grid point) for a random-access reader
      const reader = RecordBatchFileReader.from(bytes);
      reader.open();
      expect(reader.numRecordBatches).toBe(ROWS);
      const table = tableFromIPC(bytes);
      expect(table.numRows).toBe(ROWS);
      expect(table.schema.metadata!.get('servesim.rows')).toBe(String(ROWS));
      expect(table.schema.metadata!.get('servesim.grid_points')).toBe(String(ROWS));
    }
    const out = join(dir, 'results.arrows');
    expect((await servesim('sweep', sweepFile, '--out', out)).code).toBe(0);
    const bytes = readFileSync(out);
    expect(bytes.subarray(0, 4).equals(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toBe(true);
    expect(tableFromIPC(bytes).numRows).toBe(ROWS);
  });

  it('writes .parquet as Parquet, with the row count in its metadata', async () => {
    const out = join(dir, 'results.parquet');
    const { code, err } = await servesim('sweep', sweepFile, '--out', out);
    expect(code).toBe(0);
    expect(err).toContain(`wrote ${ROWS} rows (${ROWS} grid points) to ${out}\n`);
    const bytes = readFileSync(out);
    expect(bytes.subarray(0, 4).equals(PARQUET_MAGIC)).toBe(true);
    expect(bytes.subarray(-4).equals(PARQUET_MAGIC)).toBe(true);
    const metadata = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    expect(metadata.num_rows).toBe(BigInt(ROWS));
    expect(metadata.key_value_metadata).toContainEqual({ key: 'servesim.rows', value: String(ROWS) });
  });

  it('refuses an extension it does not know, naming those it does, before any work', async () => {
    const out = join(dir, 'results.xlsx');
    expect(await servesim('sweep', sweepFile, '--out', out)).toEqual({
      code: 2,
      err: `servesim: --out ${out}: cannot tell the format from its extension; name it .arrow, .feather, ` +
        '.arrows, .parquet, .csv, .json, .txt, or add --format table|json|csv|arrow|parquet\n',
    });
  });

  it('refuses to write Arrow or Parquet to a terminal', async () => {
    expect(await servesimOn(true, 'sweep', sweepFile, '--format', 'parquet')).toEqual({
      code: 2,
      err: 'servesim: Parquet is binary: write it to a file with --out results.parquet, or pipe stdout to a program\n',
    });
    expect((await servesimOn(true, 'sweep', sweepFile, '--format', 'arrow')).err).toMatch(/^servesim: an Arrow stream is binary: /);
  });
});

describe('servesim report on a results file cut short', () => {
  let file: Buffer;
  let stream: Buffer;
  beforeAll(async () => {
    expect((await servesim('sweep', sweepFile, '--out', join(dir, 'whole.arrow'))).code).toBe(0);
    expect((await servesim('sweep', sweepFile, '--out', join(dir, 'whole.arrows'))).code).toBe(0);
    file = readFileSync(join(dir, 'whole.arrow'));
    stream = readFileSync(join(dir, 'whole.arrows'));
  });

  const report = async (name: string, bytes: Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    return servesim('report', path, '--out', join(dir, `${name}.html`));
  };

  it('refuses a stream cut at a record-batch boundary, with the rows it holds of how many', async () => {
    // the same stream with its first 3 batches only: a prefix of the whole one, then its end marker
    const table = arrowTable(stream);
    const writer = new RecordBatchStreamWriter();
    writer.reset(undefined, table.schema);
    for (const batch of table.batches.slice(0, 3)) writer.write(batch);
    writer.finish();
    const prefix = Buffer.from(writer.toUint8Array(true)).subarray(0, -8);
    expect(stream.subarray(0, prefix.length).equals(prefix)).toBe(true);
    expect((await report('whole.arrows', stream)).code).toBe(0);

    const { code, err } = await report('cut.arrows', prefix);
    expect(code).toBe(2);
    expect(err).toMatch(/^servesim: .*cut\.arrows is cut short: it holds 3 of 8 rows; its Arrow stream has no end-of-stream marker/);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('refuses a file cut at a record-batch boundary', async () => {
    const reader = RecordBatchFileReader.from(file);
    reader.open();
    const boundary = Number(reader.footer!.getRecordBatch(5)!.offset);
    expect((await report('whole.arrow', file)).code).toBe(0);
    const { code, err } = await report('cut-batch.arrow', file.subarray(0, boundary));
    expect(code).toBe(2);
    expect(err).toMatch(/cut-batch\.arrow is cut short: its Arrow file footer is missing; 5 rows come before the cut/);
  });

  it('refuses a file cut in its footer', async () => {
    const { code, err } = await report('cut-footer.arrow', file.subarray(0, file.length - 20));
    expect(code).toBe(2);
    expect(err).toMatch(/cut-footer\.arrow is cut short: its Arrow file footer is missing/);
  });

  it('names --out when the page cannot be written, without a stack', async () => {
    const path = join(dir, 'for-a-folder.arrow');
    writeFileSync(path, file);
    const { code, err } = await servesim('report', path, '--out', dir);
    expect(code).toBe(2);
    expect(err).toMatch(new RegExp(`^servesim: --out ${dir}: `));
    expect(err).not.toMatch(/\n\s+at /);
  });
});

describe('servesim report on what is not a results file', () => {
  it('refuses Parquet, saying to write Arrow', async () => {
    const results = join(dir, 'for-report.parquet');
    expect((await servesim('sweep', sweepFile, '--out', results)).code).toBe(0);
    const { code, err } = await servesim('report', results, '--out', join(dir, 'parquet.html'));
    expect(code).toBe(2);
    expect(err).toBe(`servesim: ${results} is a Parquet file; servesim report reads the Arrow results only: ` +
      'write them with servesim sweep --out FILE.arrow (or .arrows)\n');
  });

  it('refuses a FIFO and /dev/zero without waiting on them (needs the build)', () => {
    const fifo = join(dir, 'fifo.arrow');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const [path, kind] of [[fifo, 'a FIFO'], ['/dev/zero', 'a device']] as const) {
      const out = spawnSync(process.execPath, ['dist/src/cli/main.js', 'report', path, '--out', '-'], { encoding: 'utf8', timeout: 20_000 });
      expect(out).toMatchObject({ status: 2, stderr: `servesim: cannot read results file ${path}: it is ${kind}\n` });
    }
  });

  it('refuses a file over 2 GiB by its size, before reading it', async () => {
    const huge = join(dir, 'huge.arrow');
    // sparse: 2 GiB of nothing on disk
    writeFileSync(huge, '');
    truncateSync(huge, 2 * 1024 ** 3 + 1);
    const { code, err } = await servesim('report', huge, '--out', '-');
    expect(code).toBe(2);
    expect(err).toBe(`servesim: results file ${huge} is 2,147,483,649 bytes; the limit is 2 GiB (2,147,483,648 bytes)\n`);
  });
});
