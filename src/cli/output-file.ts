/**
 * Output files of the CLI (`sweep --out`, `--report`, `report --out`): checked before any work,
 * and written whole or not at all, through a temporary file beside them renamed into place.
 */
import { accessSync, constants, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Where `path` is written first: beside it, so that the rename stays on one file system. */
function temporaryPath(path: string): string {
  return join(dirname(resolve(path)), `.${basename(path)}.${process.pid}.tmp`);
}

/**
 * Why `flag`'s `path` cannot be written, or null: a directory, a file not writable, or a
 * folder that is missing or takes no new file (tried by creating the temporary file).
 */
export function outputProblem(flag: string, path: string): string | null {
  let existing;
  try {
    existing = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    return `${flag} ${path}: cannot write it (${reason(err)})`;
  }
  if (existing?.isDirectory()) return `${flag} ${path}: is a directory; name a file`;
  try {
    if (existing !== undefined) accessSync(path, constants.W_OK);
    if (existing === undefined || existing.isFile()) {
      const probe = temporaryPath(path);
      writeFileSync(probe, '', { flag: 'wx' });
      rmSync(probe);
    }
  } catch (err) {
    return `${flag} ${path}: cannot write it (${reason(err)})`;
  }
  return null;
}

/** A copy of `data` in a new folder of the system's temporary directory; null if that fails too. */
function saveElsewhere(path: string, data: string | Uint8Array): string | null {
  try {
    const kept = join(mkdtempSync(join(tmpdir(), 'servesim-')), basename(path));
    writeFileSync(kept, data);
    return kept;
  } catch {
    return null;
  }
}

/**
 * Writes `data` to `path` whole or not at all: to a temporary file beside it, then renamed into
 * place (a device or pipe, such as /dev/stdout, is written as it is: a rename would replace it).
 * Returns null, or why it failed and where the data is kept instead.
 */
export function writeOutput(flag: string, path: string, data: string | Uint8Array): string | null {
  let temp: string | null = null;
  try {
    const existing = statSync(path, { throwIfNoEntry: false });
    temp = existing === undefined || existing.isFile() ? temporaryPath(path) : null;
    writeFileSync(temp ?? path, data);
    if (temp !== null) renameSync(temp, path);
    return null;
  } catch (err) {
    if (temp !== null) rmSync(temp, { force: true });
    const kept = saveElsewhere(path, data);
    return `${flag} ${path}: cannot write it (${reason(err)}); ${kept === null ? 'it could not be saved elsewhere either' : `what it would hold is in ${kept}`}`;
  }
}
