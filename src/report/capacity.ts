/**
 * A capacity search's report: one self-contained HTML page (no script, no network) with the
 * search's goals and settings, a row per design (its capacity as a load scale, requests per
 * second, per GPU and per dollar, the seeds taken there, the edge above it, the front), and the
 * Pareto front of cost against capacity drawn as an SVG chart.
 */
import type { CapacityDesign, CapacityResult } from '../capacity/api.js';
import { describeValues } from '../hint/explain.js';
import { escapeHtml, reportPage } from './html.js';

const CHART = { width: 640, height: 360, left: 64, right: 16, top: 16, bottom: 44 } as const;
const CHART_CSS = `
svg.front { background: #fff; }
svg.front .axis { stroke: #5d6675; }
svg.front text { font: 11px system-ui, sans-serif; fill: #5d6675; }
svg.front .front-line { fill: none; stroke: #1b7f3b; stroke-width: 1.5; }
svg.front circle.on { fill: #1b7f3b; }
svg.front circle.off { fill: #b0b7c3; }
tr.front td { font-weight: 600; }
`;

function trim(v: number): string {
  return String(Number(v.toPrecision(4)));
}

function number(v: number | null): string {
  return v === null ? '–' : trim(v);
}

/** Four ticks over [lo, hi], at round values. */
function ticks(lo: number, hi: number): number[] {
  const step = 10 ** Math.floor(Math.log10((hi - lo) / 4 || 1));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => (hi - lo) / s <= 5) ?? step * 10;
  const out: number[] = [];
  for (let t = Math.ceil(lo / nice) * nice; t <= hi + nice * 1e-9; t += nice) out.push(Number(t.toPrecision(12)));
  return out;
}

/** The designs with a capacity, cost (x) against requests per second (y); the front joined cheapest first. */
export function frontChart(result: CapacityResult): string {
  const shown = result.designs.filter((d) => d.requests_per_second !== null);
  if (shown.length === 0) return '<p class="note">No design passes at any load tried: there is no front to draw.</p>';
  const costs = shown.map((d) => d.cost);
  const rates = shown.map((d) => d.requests_per_second!);
  const pad = (lo: number, hi: number): [number, number] => (lo === hi ? [lo - Math.abs(lo || 1) / 2, hi + Math.abs(hi || 1) / 2] : [lo, hi]);
  const [x0, x1] = pad(Math.min(...costs), Math.max(...costs));
  const [y0, y1] = pad(0, Math.max(...rates));
  const { width, height, left, right, top, bottom } = CHART;
  const x = (v: number): number => left + ((v - x0) / (x1 - x0)) * (width - left - right);
  const y = (v: number): number => height - bottom - ((v - y0) / (y1 - y0)) * (height - top - bottom);
  const front = shown.filter((d) => d.pareto).sort((a, b) => a.cost - b.cost);
  const line = front.map((d) => `${x(d.cost).toFixed(1)},${y(d.requests_per_second!).toFixed(1)}`).join(' ');
  const dot = (d: CapacityDesign): string =>
    `<circle class="${d.pareto ? 'on' : 'off'}" cx="${x(d.cost).toFixed(1)}" cy="${y(d.requests_per_second!).toFixed(1)}" r="4"><title>${escapeHtml(`${describeValues(d.values)}: cost ${trim(d.cost)}, ${trim(d.requests_per_second!)} req/s${d.pareto ? ' (on the front)' : ''}`)}</title></circle>`;
  const xTicks = ticks(x0, x1).map((t) => `<text x="${x(t).toFixed(1)}" y="${height - bottom + 16}" text-anchor="middle">${trim(t)}</text>`);
  const yTicks = ticks(y0, y1).map((t) => `<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${trim(t)}</text>`);
  return `<svg class="front" role="img" aria-label="cost against capacity" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">` +
    `<line class="axis" x1="${left}" y1="${height - bottom}" x2="${width - right}" y2="${height - bottom}"/><line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${height - bottom}"/>` +
    `${xTicks.join('')}${yTicks.join('')}` +
    `<text x="${(left + width - right) / 2}" y="${height - 6}" text-anchor="middle">cost: ${escapeHtml(result.cost)}</text>` +
    `<text transform="translate(14 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">capacity, requests per second</text>` +
    `${front.length > 1 ? `<polyline class="front-line" points="${line}"/>` : ''}${shown.map(dot).join('')}</svg>`;
}

function designTable(result: CapacityResult): string {
  const unsettled = new Set(result.unsettled);
  const perGpu = result.designs.some((d) => d.requests_per_second_per_gpu !== null);
  const perDollar = result.designs.some((d) => d.requests_per_dollar !== null);
  const head = [...result.paths, 'cost', 'capacity', 'req/s', ...(perGpu ? ['req/s per GPU'] : []), ...(perDollar ? ['req per $'] : []), 'seeds', 'not passing above', 'front'];
  const rows = result.designs.map((d, i) => {
    const capacity = d.rate_scale === null ? `< ${trim(d.above?.rate_scale ?? result.minScale)}x` : `${trim(d.rate_scale)}x`;
    const above = d.above === null ? `none to ${trim(result.maxScale)}x` : `${trim(d.above.rate_scale)}x ${d.above.verdict}${d.above.why ? `: ${d.above.why}` : ''}`;
    const cells = [
      ...result.paths.map((p) => `<td>${escapeHtml(String(d.values[p]))}</td>`),
      `<td class="num">${trim(d.cost)}</td>`,
      `<td class="num">${escapeHtml(capacity)}${unsettled.has(i) ? ' (not settled)' : ''}</td>`,
      `<td class="num">${number(d.requests_per_second)}</td>`,
      ...(perGpu ? [`<td class="num">${number(d.requests_per_second_per_gpu)}</td>`] : []),
      ...(perDollar ? [`<td class="num">${number(d.requests_per_dollar)}</td>`] : []),
      `<td class="num">${d.cases.length === 0 ? '–' : Math.max(...d.cases.map((c) => c.seeds))}</td>`,
      `<td>${escapeHtml(above)}</td>`,
      `<td>${d.pareto ? 'yes' : ''}</td>`,
    ];
    return `<tr${d.pareto ? ' class="front"' : ''}>${cells.join('')}</tr>`;
  });
  return `<table class="hint"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** The capacity report page, from the result `servesim capacity --format json` writes or a capacity job answers. */
export function renderCapacityReport(result: CapacityResult): string {
  const settings: [string, string][] = [
    ['problem', `${result.problemId}: ${result.title}`],
    ['goals', Object.entries(result.goals).map(([k, v]) => `${k} ${v}`).join(', ')],
    ['confidence', `${result.confidence} of seeds meet every goal`],
    ['capacity', `the highest ${result.load} scale at which every case passes, to within ${trim(result.tolerance * 100)}%`],
    ['seeds', result.maxSeeds > result.seeds ? `${result.seeds} to ${result.maxSeeds} per case, until decided` : `${result.seeds} per case`],
    ['search', `${result.probes} probes of ${result.designs.length} designs in ${result.rounds} rounds, ${result.instances.toLocaleString('en')} instances${result.engine ? ` on ${result.engine}` : ''}`],
  ];
  const notes = [
    ...(result.unsettled.length > 0 ? [`The search was stopped with ${result.unsettled.length} of ${result.designs.length} designs not settled: their capacity is a load they passed at, and may be higher.`] : []),
    ...result.monotonicityViolations.map((v) => `The search assumed more never lowers the capacity; not so here: ${v}`),
  ];
  return reportPage(`${result.title}: capacity report`, CHART_CSS, `<header><h1>${escapeHtml(result.title)}</h1><p class="sub">servesim capacity report: ${result.designs.length} design${result.designs.length === 1 ? '' : 's'} over ${result.paths.map(escapeHtml).join(', ')}</p></header>
<div class="panel">
<div><dl class="meta">${settings.map(([k, v]) => `<div><dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd></div>`).join('')}</dl></div>
${notes.map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('')}
<div><h2>Cost against capacity</h2>${frontChart(result)}</div>
<div><h2>Designs</h2>${designTable(result)}</div>
</div>
<footer>servesim capacity report; this file needs no network.</footer>`);
}
