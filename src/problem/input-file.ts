/**
 * Input files read whole, within a limit: refused, naming the reason, when a path is not a
 * regular file or is past the limit. parse.ts reads problem and sweep files with it, trace.ts
 * trace files.
 */
import { closeSync, constants, openSync, readSync, statSync, type Stats } from 'node:fs';
import { ServesimError } from '../errors.js';

/** What a stat says a path is, for "not a regular file" messages. */
function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'it is a directory';
  if (stat.isFIFO()) return 'it is a FIFO';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'it is a device';
  if (stat.isSocket()) return 'it is a socket';
  return 'it is not a regular file';
}

function whyUnreadable(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  return code ?? (err as Error).message;
}

/** `1 MiB (1,048,576 bytes)`, `2 GiB (2,147,483,648 bytes)`. */
function sizeText(bytes: number): string {
  const gib = 1024 ** 3;
  const size = bytes >= gib ? `${bytes / gib} GiB` : `${bytes / 1024 / 1024} MiB`;
  return `${size} (${bytes.toLocaleString('en')} bytes)`;
}

/** An input file's bytes, refused as readInputFile's text is, past `limit` bytes. */
export function readInputBytes(path: string, what: string, shown: string, limit: number): Buffer {
  const unreadable = (why: string): ServesimError => new ServesimError('SERVESIM_FILE_UNREADABLE', `cannot read ${what} ${shown}: ${why}`);
  let stat: Stats;
  try {
    stat = statSync(path);
  } catch (err) {
    throw unreadable(whyUnreadable(err));
  }
  if (!stat.isFile()) throw unreadable(kindOf(stat));
  const over = (bytes: string): ServesimError =>
    new ServesimError('SERVESIM_INPUT_TOO_LARGE', `${what} ${shown} is ${bytes} bytes; the limit is ${sizeText(limit)}`);
  if (stat.size > limit) throw over(stat.size.toLocaleString('en'));
  // non-blocking and at most one byte past the limit: a FIFO or a growing file swapped in
  // after the stat can neither block nor run on
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw unreadable(whyUnreadable(err));
  }
  try {
    // sized by the stat, not the limit (a results file's is 2 GiB), and grown if the file grew
    let buffer = Buffer.allocUnsafe(stat.size + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > limit) throw over(`over ${limit.toLocaleString('en')}`);
        buffer = Buffer.concat([buffer], Math.min(2 * length, limit + 1));
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return buffer.subarray(0, length);
  } catch (err) {
    throw err instanceof ServesimError ? err : unreadable(whyUnreadable(err));
  } finally {
    closeSync(fd);
  }
}
