/**
 * The browser half of the sweep report (src/report/html.ts writes the page): its style sheet
 * and the script that draws the charts with Observable Plot from the embedded JSON. The script
 * is plain ES2020 for the browser, kept free of backticks and `${` so it can live in a string.
 */

export const REPORT_CSS = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5d6675; --line: #dde1e7; --card: #fff; --page: #f5f6f8; --fail: #b3261e; --pass: #1b7f3b; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header, main, nav, .panel, footer { max-width: 1380px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 12px; display: flex; align-items: baseline; gap: 12px; flex-wrap: wrap; }
h3 { font-size: 14px; margin: 16px 0 8px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.panel > div, section.case { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin-bottom: 16px; }
dl.meta { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 8px 24px; margin: 0; }
dl.meta div { min-width: 0; }
dt { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
dd { margin: 0; overflow-wrap: anywhere; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; }
.grid-paths { margin: 12px 0 0; padding-left: 18px; }
.note { background: #fff8e1; border: 1px solid #f0d98a; border-radius: 6px; padding: 8px 12px; margin: 12px 0 0; }
.panel > .note { margin: 0 0 16px; }
table.hint { border-collapse: collapse; margin-top: 8px; }
table.hint th, table.hint td { text-align: left; padding: 4px 14px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
table.hint th { color: var(--muted); font-weight: 600; font-size: 12px; }
table.hint td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.hint ul { margin: 0; padding-left: 16px; }
nav#controls { position: sticky; top: 0; z-index: 2; background: var(--page); padding-top: 10px; padding-bottom: 10px; display: flex; flex-wrap: wrap; gap: 10px 22px; align-items: center; border-bottom: 1px solid var(--line); margin-bottom: 16px; }
nav#controls:empty { display: none; }
nav#controls label { display: flex; gap: 6px; align-items: center; color: var(--muted); }
nav#controls select { font: inherit; padding: 2px 4px; }
.badge { font-size: 12px; font-weight: 600; border-radius: 10px; padding: 1px 9px; }
.badge.pass { background: #e3f4e8; color: var(--pass); }
.badge.fail { background: #fbe5e3; color: var(--fail); }
.badge.none { background: #eceff1; color: var(--muted); }
.charts { display: flex; flex-wrap: wrap; gap: 20px 24px; align-items: flex-start; }
figure.chart { margin: 0; }
figure.chart > figcaption { font-weight: 600; margin-bottom: 4px; }
figure.chart .hint-key { color: var(--muted); font-weight: 400; font-size: 12px; }
figure.chart figure { margin: 0; }
.empty { color: var(--muted); font-style: italic; }
.error { color: var(--fail); white-space: pre-wrap; }
footer { color: var(--muted); font-size: 12px; padding-bottom: 24px; }
`;

export const REPORT_SCRIPT = `
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('servesim-data').textContent);
  var axes = data.axes, cases = data.cases, meta = data.meta, goals = meta.goals;
  var root = document.getElementById('cases');
  var controls = document.getElementById('controls');
  var varying = axes.map(function (_, i) { return i; }).filter(function (i) { return axes[i].values.length > 1; });
  var state = { x: data.layout.x, y: data.layout.y, fixed: axes.map(function () { return 0; }) };
  var byCase = cases.map(function () { return []; });
  data.rows.forEach(function (r) { byCase[r.case].push(r); });
  // Pass probability is coloured around the confidence the problem asks for: red below, green above.
  var pivot = Math.min(0.99, Math.max(0.01, meta.confidence == null ? 0.5 : meta.confidence));
  var FAIL = '#d62728';

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text != null) node.textContent = text;
    return node;
  }
  function num(v, digits) { return String(parseFloat(v.toPrecision(digits))); }
  function percent(v) { return num(v * 100, 4) + '%'; }
  function seconds(v) { return num(v, 3) + ' s'; }
  function label(i, k) { return String(axes[i].values[k]); }
  function clamp(v, lo, hi) { return Math.max(lo, Math.min(hi, v)); }
  function textWidth(values) {
    return 7 * values.reduce(function (m, v) { return Math.max(m, String(v).length); }, 1);
  }

  function select(text, options, value, onChange) {
    var wrap = el('label');
    wrap.append(el('span', null, text));
    var s = el('select');
    s.name = text;
    options.forEach(function (o) {
      var opt = el('option', null, o[1]);
      opt.value = String(o[0]);
      s.append(opt);
    });
    s.value = String(value);
    s.addEventListener('change', function () { onChange(Number(s.value)); });
    wrap.append(s);
    return wrap;
  }

  function buildControls() {
    controls.replaceChildren();
    if (varying.length < 2) return;
    controls.append(select('x axis', varying.map(function (i) { return [i, axes[i].path]; }), state.x, function (v) {
      if (v === state.y) state.y = state.x;
      state.x = v;
      update();
    }));
    controls.append(select('y axis / series', varying.filter(function (i) { return i !== state.x; }).map(function (i) { return [i, axes[i].path]; }), state.y, function (v) {
      state.y = v;
      update();
    }));
    varying.filter(function (i) { return i !== state.x && i !== state.y; }).forEach(function (i) {
      controls.append(select(axes[i].path, axes[i].values.map(function (v, k) { return [k, String(v)]; }), state.fixed[i], function (v) {
        state.fixed[i] = v;
        update();
      }));
    });
  }

  function inSlice(r) {
    for (var i = 0; i < axes.length; i++) {
      if (i !== state.x && i !== state.y && r.point[i] !== state.fixed[i]) return false;
    }
    return true;
  }

  function pointTitle(r) {
    var where = axes.map(function (a, i) { return a.path + ' = ' + label(i, r.point[i]); }).join('\\n');
    return r.overloaded ? where + '\\n' + r.overloaded : where;
  }

  // The points of one case (or the worst case over all of them) in the current slice.
  function slicePoints(rows) {
    return rows.filter(inSlice).map(function (r) {
      return {
        x: axes[state.x].values[r.point[state.x]],
        xi: r.point[state.x],
        s: state.y >= 0 ? axes[state.y].values[r.point[state.y]] : null,
        si: state.y >= 0 ? r.point[state.y] : 0,
        r: r,
        title: pointTitle(r),
      };
    }).sort(function (a, b) { return a.si - b.si || a.xi - b.xi; });
  }

  function worstRows() {
    var byPoint = new Map();
    data.rows.forEach(function (r) {
      var key = r.point.join(',');
      var list = byPoint.get(key);
      if (list) list.push(r); else byPoint.set(key, [r]);
    });
    var out = [];
    byPoint.forEach(function (list) {
      var complete = list.length === cases.length;
      var probabilities = list.map(function (r) { return r.pass_probability; });
      var known = complete && probabilities.every(function (p) { return p !== null; });
      out.push({
        point: list[0].point,
        pass_probability: known ? Math.min.apply(null, probabilities) : null,
        passes: complete && list.every(function (r) { return r.passes; }),
        overloaded: list.map(function (r) { return r.overloaded ? cases[r.case] + ': ' + r.overloaded : null; }).filter(Boolean).join('\\n') || null,
      });
    });
    return out;
  }

  function inkOn(p) {
    if (p === null) return '#5d6675';
    var t = p < pivot ? 0.5 * p / pivot : 0.5 + 0.5 * (p - pivot) / (1 - pivot);
    var c = d3.rgb(d3.interpolateRdYlGn(t));
    return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b < 128 ? '#fff' : '#1d2330';
  }

  function hintCells() {
    return data.hintPoints.filter(function (hp) {
      return hp.every(function (k, i) { return i === state.x || i === state.y || k === state.fixed[i]; });
    }).map(function (hp) { return { x: axes[state.x].values[hp[state.x]], s: axes[state.y].values[hp[state.y]] }; });
  }

  function heatmap(points) {
    var ax = axes[state.x], ay = axes[state.y];
    var nx = ax.values.length, ny = ay.values.length;
    var marginLeft = clamp(textWidth(ay.values) + 24, 44, 220);
    // about as wide as a line chart, so that three charts share a row
    var cellW = clamp(Math.floor((390 - marginLeft) / nx), 16, ax.kind === 'string' ? 120 : 80), cellH = clamp(Math.floor(300 / ny), 14, 44);
    var rotate = textWidth(ax.values) > cellW - 4;
    // a label turned 40 degrees takes about two thirds of its length downwards
    var marginBottom = rotate ? clamp(Math.round(textWidth(ax.values) * 0.66) + 34, 44, 160) : 40;
    var step = Math.ceil(nx / 14);
    var all = [];
    ax.values.forEach(function (x) { ay.values.forEach(function (s) { all.push({ x: x, s: s }); }); });
    var known = points.filter(function (p) { return p.r.pass_probability !== null; });
    var marks = [
      Plot.cell(all, { x: 'x', y: 's', fill: '#eceff1', inset: 0.5, ariaDescription: 'no result' }),
      Plot.cell(known, { x: 'x', y: 's', ariaDescription: 'pass probability', fill: function (p) { return p.r.pass_probability; }, inset: 0.5, title: function (p) { return p.title + '\\npass probability ' + num(p.r.pass_probability, 3) + (p.r.passes ? ' (passes)' : ''); } }),
      Plot.cell(points.filter(function (p) { return p.r.passes; }), { x: 'x', y: 's', fill: 'none', stroke: '#1d2330', strokeWidth: 2, inset: 2, ariaDescription: 'passes' }),
    ];
    if (nx <= 16 && ny <= 24) {
      marks.push(Plot.text(points, { x: 'x', y: 's', fontSize: 11, fill: function (p) { return inkOn(p.r.pass_probability); }, text: function (p) { return p.r.pass_probability === null ? '\\u2013' : p.r.pass_probability.toFixed(2); } }));
    }
    var hints = hintCells();
    if (hints.length > 0) {
      marks.push(Plot.text(hints, { x: 'x', y: 's', text: function () { return '\\u2605'; }, fontSize: 15, fill: '#1d2330', stroke: '#fff', strokeWidth: 1.5, paintOrder: 'stroke', dx: cellW / 2 - 8, dy: -cellH / 2 + 8 }));
    }
    return Plot.plot({
      width: marginLeft + nx * cellW + 16,
      height: 24 + ny * cellH + marginBottom,
      marginLeft: marginLeft, marginBottom: marginBottom, marginTop: 24, marginRight: 16,
      style: { fontSize: '11px' },
      x: { type: 'band', domain: ax.values, padding: 0, label: ax.path, labelAnchor: 'center', tickRotate: rotate ? -40 : 0, ticks: ax.values.filter(function (_, k) { return k % step === 0; }) },
      y: { type: 'band', domain: ay.values, padding: 0, label: ay.path, reverse: ay.kind === 'number' },
      color: { type: 'diverging', scheme: 'RdYlGn', domain: [0, 1], pivot: pivot, symmetric: false, legend: true, label: 'pass probability', width: 300, ticks: [0, 0.5, pivot, 1].filter(function (v, k, a) { return a.indexOf(v) === k; }), tickFormat: function (v) { return num(v, 3); } },
      marks: marks,
    });
  }

  // The line charts' x axis: the scale, and where a grid value goes on it.
  function xAxis() {
    var ax = axes[state.x];
    var same = function (v) { return v; };
    if (ax.kind === 'string') return { position: same, scale: { type: 'point', domain: ax.values, padding: 0.4, label: ax.path, labelAnchor: 'center' } };
    var v = ax.values;
    var ratios = v.slice(1).map(function (x, k) { return x / v[k]; });
    // doubling grids (4, 8, 16, 32 slots) read better on a log axis; drawn as a linear axis of
    // log2 values, because Plot's log axis leaves out labels that are not 1, 2 or 5 times a power of ten
    var log = v[0] > 0 && v[v.length - 1] / v[0] >= 4 && Math.max.apply(null, ratios) / Math.min.apply(null, ratios) < 1.5;
    var position = log ? Math.log2 : same;
    var scale = { type: 'linear', label: ax.path, labelAnchor: 'center', tickFormat: function (x) { return num(log ? Math.pow(2, x) : x, 6); } };
    var step = Math.ceil(v.length / 10);
    scale.ticks = v.filter(function (_, k) { return k % step === 0; }).map(position);
    return { position: position, scale: scale };
  }

  // spec: { value, lo, hi (functions of a row, or null), y (scale options), goal, goalText }
  function lineChart(points, spec) {
    var series = state.y >= 0 ? axes[state.y] : null;
    var colour = series ? 's' : '#2f6db5';
    var z = series ? 's' : null;
    var x = xAxis();
    var rows = points.map(function (p) {
      return { x: x.position(p.x), s: p.s, v: spec.value(p.r), lo: spec.lo ? spec.lo(p.r) : null, hi: spec.hi ? spec.hi(p.r) : null, title: p.title };
    });
    var marks = [];
    if (spec.lo) marks.push(Plot.areaY(rows, { x: 'x', y1: 'lo', y2: 'hi', z: z, fill: colour, fillOpacity: 0.16 }));
    marks.push(Plot.lineY(rows, { x: 'x', y: 'v', z: z, stroke: colour, strokeWidth: 2 }));
    marks.push(Plot.dot(rows, { x: 'x', y: 'v', fill: colour, r: 2.5, title: function (d) { return d.title + '\\n' + spec.describe(d); } }));
    if (spec.goal != null) {
      marks.push(Plot.ruleY([spec.goal], { stroke: FAIL, strokeWidth: 1.5, strokeDasharray: '5,4' }));
      marks.push(Plot.text([spec.goal], { y: function (d) { return d; }, frameAnchor: 'right', textAnchor: 'end', dy: -7, fill: FAIL, stroke: '#fff', strokeWidth: 3, paintOrder: 'stroke', fontWeight: 600, text: function () { return spec.goalText; } }));
    }
    var options = {
      width: 400, height: 260, marginLeft: 56, marginRight: 18, marginTop: 26, marginBottom: 42,
      style: { fontSize: '11px' },
      grid: true,
      x: x.scale,
      y: spec.y,
      marks: marks,
    };
    if (series) {
      var n = series.values.length;
      options.color = {
        type: 'ordinal', domain: series.values, legend: true, label: series.path,
        // a numeric series reads as a ramp; the yellow end of viridis is cut, it vanishes on white
        range: series.kind === 'number' ? d3.quantize(function (t) { return d3.interpolateViridis(t * 0.85); }, Math.max(n, 2)).slice(0, n) : d3.schemeTableau10,
      };
    }
    return Plot.plot(options);
  }

  function successChart(points) {
    return lineChart(points, {
      value: function (r) { return r.success; },
      lo: function (r) { return r.success_lo; },
      hi: function (r) { return r.success_hi; },
      describe: function (d) { return d.v === null ? 'no requests' : 'success ' + percent(d.v) + (d.lo === null ? '' : ' (' + percent(d.lo) + ' \\u2013 ' + percent(d.hi) + ')'); },
      y: { label: 'success (%)', percent: true, labelAnchor: 'top' },
      goal: goals ? goals.success : null,
      goalText: goals ? 'goal \\u2265 ' + percent(goals.success) : '',
    });
  }

  function ms(v) { return v === null ? null : v / 1000; }

  function p99Chart(points) {
    return lineChart(points, {
      value: function (r) { return ms(r.p99_ms); },
      lo: function (r) { return ms(r.p99_lo_ms); },
      hi: function (r) { return ms(r.p99_hi_ms); },
      describe: function (d) { return d.v === null ? 'no successes' : 'p99 ' + seconds(d.v) + (d.lo === null ? '' : ' (' + seconds(d.lo) + ' \\u2013 ' + seconds(d.hi) + ')'); },
      y: { label: 'p99 latency of successes (s)', zero: true },
      goal: goals ? goals.p99_ms / 1000 : null,
      goalText: goals ? 'goal \\u2264 ' + seconds(goals.p99_ms / 1000) : '',
    });
  }

  function passChart(points) {
    return lineChart(points, {
      value: function (r) { return r.pass_probability; },
      lo: null, hi: null,
      describe: function (d) { return d.v === null ? 'no result' : 'pass probability ' + num(d.v, 3); },
      y: { label: 'pass probability', domain: [0, 1] },
      goal: meta.confidence,
      goalText: 'confidence ' + num(meta.confidence == null ? 0 : meta.confidence, 3),
    });
  }

  function seriesKey() {
    return state.y >= 0 ? 'colour: ' + axes[state.y].path + '; ' : '';
  }

  function figure(caption, chart, key) {
    var fig = el('figure', 'chart');
    var cap = el('figcaption', null, caption);
    if (key) cap.append(' ', el('span', 'hint-key', key));
    fig.append(cap, chart);
    return fig;
  }

  function badge(points) {
    var known = points.filter(function (p) { return p.r.pass_probability !== null; });
    var passing = points.filter(function (p) { return p.r.passes; }).length;
    if (known.length === 0) return el('span', 'badge none', 'no results here');
    return el('span', 'badge ' + (passing > 0 ? 'pass' : 'fail'), 'passes at ' + passing + ' of ' + points.length + ' points shown');
  }

  function passFigure(points, caption) {
    if (state.y >= 0) return figure(caption, heatmap(points), 'outlined: passes' + (hintCells().length ? '; \\u2605 the hint' : ''));
    return figure(caption, passChart(points));
  }

  function section(title, points, charts) {
    var sec = el('section', 'case');
    var h = el('h2', null, title);
    h.append(badge(points));
    sec.append(h);
    var box = el('div', 'charts');
    if (points.length === 0) box.append(el('p', 'empty', 'No results at this selection.'));
    else charts.forEach(function (c) { box.append(c()); });
    sec.append(box);
    return sec;
  }

  function update() {
    buildControls();
    var out = [];
    if (state.x < 0) {
      out.push(el('p', 'empty', 'This sweep has no grid paths: there is nothing to plot.'));
    } else {
      if (cases.length > 1) {
        var worst = slicePoints(worstRows());
        out.push(section('All cases', worst, [function () { return passFigure(worst, 'lowest pass probability over the cases'); }]));
      }
      cases.forEach(function (name, c) {
        var points = slicePoints(byCase[c]);
        out.push(section(name, points, [
          function () { return passFigure(points, 'pass probability'); },
          function () { return figure('success', successChart(points), seriesKey() + 'band: across-seed interval'); },
          function () { return figure('p99 latency', p99Chart(points), seriesKey() + 'band: spread of per-seed p99'); },
        ]));
      });
    }
    root.replaceChildren.apply(root, out);
  }

  try {
    update();
    document.documentElement.dataset.rendered = 'true';
  } catch (err) {
    root.replaceChildren(el('p', 'error', 'The charts could not be drawn: ' + (err && err.stack ? err.stack : String(err))));
    console.error(err);
  }
})();
`;
