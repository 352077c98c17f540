/** The problem package: files in, typed Problems out. */
export { loadProblem, parseProblem, problemFromObject, selectCases, type TraceDirs } from './parse.js';
export { loadTrace, parseTrace, traceFormatOf } from './trace.js';
export { applyOverrides, parseOverride, settablePaths, type Override } from './overrides.js';
export { BUILTIN_PROFILES, DEFAULT_PROFILE } from './profiles.js';
export { BUILTIN_CASE_NAMES, LIMITS } from './limits.js';
export { formatDuration, parseDuration, parseFraction } from './units.js';
export { problemJsonSchema, problemJsonSchemaText, PROBLEM_SCHEMA_FILE } from './schema-json.js';
