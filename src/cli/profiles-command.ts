/**
 * `servesim profiles [--format table|json]`: the GPU profiles a problem's `gpu.profile` may
 * name (the built-in assumptions and the published catalogue), what the engines run for each
 * (BLIS's alphas among it), the rounding to their units, a lone request's time per output token
 * in BLIS and in servesim, the roofline floor under each and whether its fit broke it, and the
 * GPU types' list prices. GET /v1/profiles answers the same document as the JSON.
 */
import { listProfiles, type ProfileListing, type ProfilesDocument } from '../problem/profiles.js';
import { EXIT } from './options.js';
import type { CliIo } from './run-command.js';

/** Runs `profiles`: the table, or the JSON document GET /v1/profiles answers. */
export function profilesCommand(opts: { readonly format: 'table' | 'json' }, io: Pick<CliIo, 'stdout'>): number {
  const doc = listProfiles();
  io.stdout.write(opts.format === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : formatProfiles(doc));
  return EXIT.ok;
}

const COLUMNS: readonly (readonly [string, (p: ProfileListing) => string])[] = [
  ['id', (p) => p.id],
  ['gpu', (p) => p.gpu ?? '-'],
  ['tp', (p) => (p.tp === null ? '-' : String(p.tp))],
  ['vllm', (p) => p.vllm?.replace(/^.*:/, '') ?? '-'],
  ['base us', (p) => micros(p.base_us)],
  ['perSeq us', (p) => micros(p.per_seq_us)],
  ['prefill ns/tok', (p) => String(p.prefill_ns_per_token)],
  ['alpha0 us', (p) => (p.host === null ? '-' : micros(p.host.queueing_us))],
  ['alpha1 us/tok', (p) => (p.host === null ? '-' : micros(p.host.queueing_us_per_prompt_token))],
  ['alpha2 us/tok', (p) => (p.host === null ? '-' : micros(p.host.us_per_output_token))],
  ['chunk', (p) => String(p.chunk)],
  ['kv tokens', (p) => String(p.kv_tokens)],
  ['$/GPU-h', (p) => (p.price_per_gpu_hour === null ? '-' : p.price_per_gpu_hour.toFixed(2))],
  ['rounding', (p) => (p.rounding === null ? 'assumption' : percent(Math.max(...Object.values(p.rounding).map((h) => Math.abs(h.relative))), 3))],
  ['BLIS TPOT us', (p) => (p.lone_tpot === null ? '-' : String(p.lone_tpot.blis_us))],
  ['TPOT us', (p) => (p.lone_tpot === null ? '-' : micros(p.lone_tpot.servesim_us))],
  ['vs BLIS', (p) => (p.lone_tpot === null ? '-' : percent(p.lone_tpot.relative, 1, true))],
  ['floor us', (p) => (p.roofline === null ? '-' : String(Math.ceil(p.roofline.weights_us)))],
  ['floor ns/tok', (p) => (p.roofline === null ? '-' : String(Math.ceil(p.roofline.prefill_ns_per_token)))],
  ['floored', (p) => (p.roofline === null ? '-' : flooredText(p.roofline))],
];

/** A share as a percentage with `digits` decimals, signed where it says more or less. */
function percent(x: number, digits: number, signed = false): string {
  return `${signed && x >= 0 ? '+' : ''}${(x * 100).toFixed(digits)}%`;
}

/** Microseconds to the nanosecond, without trailing zeros. */
function micros(us: number): string {
  return String(Number(us.toFixed(3)));
}

/** The terms the floor raised, and `token` where even the fit's whole lone token is faster than the floor. */
function flooredText(r: NonNullable<ProfileListing['roofline']>): string {
  const terms = [...r.floored, ...(r.token_faster_than_floor ? ['token'] : [])];
  return terms.length === 0 ? '-' : terms.join('+');
}

/** The table, then where the numbers come from. */
export function formatProfiles(doc: ProfilesDocument): string {
  const rows = doc.profiles.map((p) => COLUMNS.map(([, cell]) => cell(p)));
  const head = COLUMNS.map(([name]) => name);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  // names left, numbers right, the floored flags left
  const left = (i: number): boolean => i < 4 || i === COLUMNS.length - 1;
  const render = (cells: readonly string[]): string =>
    cells.map((c, i) => (left(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  const lines = [render(head), render(widths.map((w) => '-'.repeat(w))), ...rows.map(render)];
  lines.push('');
  const sources = new Set(doc.profiles.filter((p) => !p.assumption).map((p) => p.source));
  for (const p of doc.profiles.filter((x) => x.assumption)) lines.push(`${p.id}: ${p.source}`);
  for (const s of sources) lines.push(`catalogue: ${s}`);
  lines.push(
    'The engines hold base, perSeq and BLIS\'s alphas (alpha0 + alpha1 x prompt tokens before a call joins its replica\'s queue, ' +
      'alpha2 for each output token after its step: docs/model.md section 3) to the nanosecond and prefill in whole nanoseconds a token, ' +
      'and round a step up to the microsecond once; "rounding" is the largest relative error that holding makes to a coefficient (-f json: each). ' +
      '"BLIS TPOT" is a request alone on a replica in BLIS, floor(beta0 + beta2) + floor(alpha2); "TPOT" the same in servesim.',
  );
  const floored = doc.profiles.filter((p) => (p.roofline?.floored.length ?? 0) > 0);
  lines.push(
    'Roofline floor (docs/model.md section 3): "floor us" is the time to read the weights a decode step uses once over tp GPUs ' +
      '(base\'s floor), "floor ns/tok" a prompt token\'s FLOPs at peak (prefill\'s), from problems/profiles/models.yaml and hardware.yaml; ' +
      `${floored.length} fits are faster than their floor there, which then applies ("floored"); what it adds to a lone decode step comes out of alpha2 ` +
      '(-f json: output_us_absorbed), so a lone token takes BLIS\'s time unless the fit\'s whole token is faster than the floor ("token"). ' +
      "A problem also raises perSeq to the KV read of its shortest prompt (-f json: kv_us_per_1k_tokens).",
  );
  if (doc.shadowed.length > 0) {
    lines.push(
      `${doc.shadowed.length} later items of the catalogue repeat an earlier model, GPU, TP and vLLM version with other numbers; ` +
        'as in BLIS, the first is the one used (-f json lists the others under "shadowed").',
    );
  }
  for (const price of doc.prices) {
    lines.push(
      `$/GPU-h ${price.type}: ${price.gpu}, ${price.instance} at $${price.instancePerHour}/h over ${price.gpusPerInstance} GPUs, ` +
        `read ${price.retrieved} (${price.file}); set gpu.pricePerHour to what you pay`,
    );
  }
  return `${lines.join('\n')}\n`;
}
