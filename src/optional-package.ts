/**
 * The optional dependencies (webgpu for the GPU engine, bullmq and ioredis for the queue) are
 * loaded on first use, so that a CPU-only install (`npm install --omit=optional`) runs the rest.
 */

/** Whether `err` says that the package `name` itself is not installed (not a file inside it). */
export function isMissingPackage(err: unknown, name: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  // import() says ERR_MODULE_NOT_FOUND, require() MODULE_NOT_FOUND; both quote the name
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && err.message.includes(`'${name}'`);
}

/** The message for a feature whose optional packages are not installed. */
export function installMessage(feature: string, names: readonly string[]): string {
  return `${feature} needs ${names.join(' and ')} (optional, not installed): npm install ${names.join(' ')}`;
}
