/**
 * The browser half of the sweep report (src/report/html.ts writes the page): its style sheet
 * and the script that draws the charts with Observable Plot from the embedded JSON. The script
 * is plain ES2020 for the browser, kept free of backticks and `${` so it can live in a string.
 * REPORT_HELPERS, its pure functions (no DOM, no data), open it; the tests run them alone.
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
table.hint button { font: inherit; font-size: 12px; padding: 1px 10px; cursor: pointer; }
nav#controls { position: sticky; top: 0; z-index: 2; background: var(--page); padding-top: 10px; padding-bottom: 10px; display: flex; flex-wrap: wrap; gap: 10px 22px; align-items: center; border-bottom: 1px solid var(--line); margin-bottom: 16px; }
nav#controls:empty { display: none; }
nav#controls label { display: flex; gap: 6px; align-items: center; color: var(--muted); }
nav#controls select { font: inherit; padding: 2px 4px; }
.badge { font-size: 12px; font-weight: 600; border-radius: 10px; padding: 1px 9px; }
.badge.pass { background: #e3f4e8; color: var(--pass); }
.badge.fail { background: #fbe5e3; color: var(--fail); }
.badge.undecided { background: #fff3d6; color: #8a5a00; }
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

/**
 * The script's pure functions, over rows and points as the page's JSON has them (ReportRow,
 * ReportPoint in html.ts): `new Function(REPORT_HELPERS + 'return countText;')()` runs one alone.
 */
export const REPORT_HELPERS = `
  function num(v, digits) { return String(parseFloat(v.toPrecision(digits))); }
  // How many of these rows or points pass, are undecided and fail.
  function verdictCounts(rows) {
    var counts = { pass: 0, undecided: 0, fail: 0, total: rows.length };
    rows.forEach(function (r) {
      if (r.verdict === 'PASS') counts.pass++;
      else if (r.verdict === 'UNDECIDED') counts.undecided++;
      else counts.fail++;
    });
    return counts;
  }
  // ", 1 undecided" when any is.
  function undecidedText(counts) {
    return counts.undecided > 0 ? ', ' + counts.undecided + ' undecided' : '';
  }
  // "4 of 6 pass", and ", 1 undecided" when any is.
  function countText(counts) {
    return counts.pass + ' of ' + counts.total + ' pass' + undecidedText(counts);
  }
  // "passes at 4 of 6 points shown", and ", 1 undecided" when any is.
  function badgeText(counts) {
    return 'passes at ' + counts.pass + ' of ' + counts.total + ' points shown' + undecidedText(counts);
  }
  // What a cell's title adds about its verdict: " (passes)", " (undecided: success,p99)" or nothing.
  function verdictNote(r) {
    if (r.verdict === 'PASS') return ' (passes)';
    if (r.verdict === 'UNDECIDED') return ' (undecided' + (r.undecided ? ': ' + r.undecided : '') + ')';
    return '';
  }
  // "0.91 (0.81-0.96)": a value with its interval when it has one; format writes each number.
  function withInterval(text, lo, hi, format) {
    return lo == null || hi == null ? text : text + ' (' + format(lo) + '-' + format(hi) + ')';
  }
`;

export const REPORT_SCRIPT = `
(function () {
  'use strict';
` + REPORT_HELPERS + `
  var data = JSON.parse(document.getElementById('servesim-data').textContent);
  var axes = data.axes, cases = data.cases, meta = data.meta, goals = meta.goals, metrics = data.metrics;
  var root = document.getElementById('cases');
  var controls = document.getElementById('controls');
  var varying = axes.map(function (_, i) { return i; }).filter(function (i) { return axes[i].values.length > 1; });
  var state = { x: data.layout.x, y: data.layout.y, fixed: data.layout.fixed.slice(), metric: 0 };
  var byCase = cases.map(function () { return []; });
  data.rows.forEach(function (r) { byCase[r.case].push(r); });
  var passMetric = metrics.filter(function (m) { return m.name === 'pass_probability'; })[0];
  var FAIL = '#d62728';
  var FONT = '11px system-ui, sans-serif', BOLD = '600 ' + FONT;
  // Labels are placed before Plot draws them, from their widths in the font it draws them in.
  var measure = document.createElement('canvas').getContext('2d');
  var LINE = 14, TURN = 40 * Math.PI / 180;
  // the line charts' plotting area: with the usual margins a chart is about 400 px wide, so that
  // three charts share a row; the margins grow to hold long labels
  var FRAME = 300;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text != null) node.textContent = text;
    return node;
  }
  function percent(v) { return num(v * 100, 4) + '%'; }
  function seconds(v) { return num(v, 3) + ' s'; }
  function label(i, k) { return String(axes[i].values[k]); }
  function clamp(v, lo, hi) { return Math.max(lo, Math.min(hi, v)); }
  function widths(texts, font) {
    measure.font = font || FONT;
    return texts.map(function (t) { return measure.measureText(t).width; });
  }
  function widest(texts, font) { return widths(texts, font).reduce(function (m, w) { return Math.max(m, w); }, 0); }
  function column(name) {
    var j = data.columns.indexOf(name);
    return function (r) { return j < 0 ? null : r.values[j]; };
  }
  function isHint(point) {
    return data.hintPoints.some(function (hp) { return hp && hp.every(function (k, i) { return k === point[i]; }); });
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

  // "4 of 6 pass, 1 undecided": how many shown points pass every case where path i takes its k-th value.
  function passCount(i, k) {
    return countText(verdictCounts(data.points.filter(function (p) { return p.point[i] === k && inSlice(p, i); })));
  }

  function buildControls() {
    controls.replaceChildren();
    if (metrics.length > 1) {
      controls.append(select('metric', metrics.map(function (m, k) { return [k, m.label]; }), state.metric, function (v) {
        state.metric = v;
        update();
      }));
    }
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
      controls.append(select(axes[i].path, axes[i].values.map(function (v, k) { return [k, String(v) + ' (' + passCount(i, k) + ')']; }), state.fixed[i], function (v) {
        state.fixed[i] = v;
        update();
      }));
    });
  }

  // On the chosen slice: every path but x, y (and the one a selector option asks about) at its selector's value.
  function inSlice(r, except) {
    for (var i = 0; i < axes.length; i++) {
      if (i !== state.x && i !== state.y && i !== except && r.point[i] !== state.fixed[i]) return false;
    }
    return true;
  }

  function pointTitle(r) {
    var where = axes.map(function (a, i) { return a.path + ' = ' + label(i, r.point[i]); }).join('\\n');
    return r.overloaded ? where + '\\n' + r.overloaded : where;
  }

  // The points of one case (or of all of them, data.points) in the current slice.
  function slicePoints(rows) {
    return rows.filter(function (r) { return inSlice(r); }).map(function (r) {
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

  // How metric m is drawn: its value (value(r), or the row's column), colours and formats. With a
  // goal it is coloured around the goal (red short of it, green past it), otherwise as a ramp.
  // A row's own value is described with its interval (the m_lo and m_hi columns) where it has one.
  function metricView(m, value) {
    var unit = m.seconds ? 1000 : 1;
    var get = function (r) { return r.values[m.column]; };
    var band = m.seconds ? [m.name.replace(/_ms$/, '_lo_ms'), m.name.replace(/_ms$/, '_hi_ms')] : [m.name + '_lo', m.name + '_hi'];
    var lowEnd = value ? null : column(band[0]), highEnd = value ? null : column(band[1]);
    var goal = m.goal ? m.goal.value / unit : null;
    var lo = goal === null ? Infinity : goal, hi = goal === null ? -Infinity : goal;
    data.rows.forEach(function (r) {
      var v = get(r);
      if (v !== null) { lo = Math.min(lo, v / unit); hi = Math.max(hi, v / unit); }
    });
    // shares and probabilities keep their whole range, so that a colour means the same in every chart
    var domain = lo >= 0 && hi <= 1 ? [0, 1] : [Math.min(lo, 0), hi > lo ? hi : lo + 1];
    var span = domain[1] - domain[0];
    var ticks = d3.ticks(domain[0], domain[1], 3);
    var color = { legend: true, label: m.label, width: 300, tickFormat: function (v) { return num(v, 3); } };
    if (goal === null) Object.assign(color, { type: 'linear', scheme: 'viridis', domain: domain, ticks: ticks });
    else {
      Object.assign(color, {
        type: 'diverging', scheme: 'RdYlGn', reverse: m.goal.side === 'max', domain: domain, symmetric: false,
        pivot: clamp(goal, domain[0] + 0.01 * span, domain[1] - 0.01 * span),
        ticks: ticks.filter(function (t) { return Math.abs(t - goal) > 0.08 * span; }).concat([goal]).sort(function (a, b) { return a - b; }),
      });
    }
    var paint = Plot.scale({ color: color });
    var format = function (v) { return v === null ? '\\u2013' : num(v, 3); };
    return {
      label: m.label,
      value: value || function (r) { var v = get(r); return v === null ? null : v / unit; },
      domain: domain,
      color: color,
      format: format,
      // r: the row v is of, for its interval
      describe: function (v, r) {
        var lo = r && lowEnd ? lowEnd(r) : null, hi = r && highEnd ? highEnd(r) : null;
        return m.label + ' ' + (v === null ? format(v) : withInterval(format(v), lo === null ? null : lo / unit, hi === null ? null : hi / unit, format));
      },
      goal: goal,
      goalText: goal === null ? '' : (m.goal.side === 'max' ? '\\u2264 ' : '\\u2265 ') + format(goal) + (m.seconds ? ' s' : ''),
      ink: function (v) {
        if (v === null) return '#5d6675';
        var c = d3.rgb(paint.apply(v));
        return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b < 128 ? '#fff' : '#1d2330';
      },
    };
  }

  // Which x tick labels are drawn, and the margins that hold them whole. Side by side where they
  // fit; otherwise names turn (each is needed) and numbers thin out, keeping the first and the
  // last. at(k): where value k sits, from the frame's left edge; frame: the frame's width.
  function xTicks(ax, at, frame) {
    var texts = ax.values.map(String), w = widths(texts), n = texts.length;
    var clear = function (a, b) { return at(b) - w[b] / 2 >= at(a) + w[a] / 2 + 8; };
    var ticks = [];
    for (var k = 0; k < n; k++) if (ticks.length === 0 || clear(ticks[ticks.length - 1], k)) ticks.push(k);
    var rotate = ax.kind === 'string' && ticks.length < n;
    if (rotate) {
      // turned labels lie parallel, a line apart when their ticks are this far apart
      var stride = Math.ceil(LINE / ((at(1) - at(0)) * Math.sin(TURN)));
      ticks = texts.map(function (_, k) { return k; }).filter(function (k) { return k % stride === 0; });
    } else if (ticks[ticks.length - 1] !== n - 1) {
      while (ticks.length > 0 && !clear(ticks[ticks.length - 1], n - 1)) ticks.pop();
      ticks.push(n - 1);
    }
    var sin = Math.sin(TURN), cos = Math.cos(TURN);
    var left = 0, right = 0, down = 9 + LINE;
    ticks.forEach(function (k) {
      // Plot ends a turned label at the tick (6 px) and its padding (6 px), centred on that line
      left = Math.max(left, (rotate ? w[k] * cos + LINE / 2 * sin : w[k] / 2) - at(k));
      right = Math.max(right, at(k) + (rotate ? LINE / 2 * sin : w[k] / 2) - frame);
      if (rotate) down = Math.max(down, 12 + w[k] * sin + LINE / 2 * cos);
    });
    return {
      ticks: ticks, rotate: rotate, texts: texts, left: left + 4, right: right + 4,
      // the axis label sits at the bottom of the margin
      bottom: Math.ceil(down + LINE + 6),
    };
  }

  function hintCells() {
    return data.hintPoints.filter(function (hp) {
      return hp && hp.every(function (k, i) { return i === state.x || i === state.y || k === state.fixed[i]; });
    }).map(function (hp) { return { x: axes[state.x].values[hp[state.x]], s: axes[state.y].values[hp[state.y]] }; });
  }

  function heatmap(points, view) {
    var ax = axes[state.x], ay = axes[state.y];
    var nx = ax.values.length, ny = ay.values.length;
    // the y tick labels, their ticks and the y axis's label turned beside them
    var yMargin = Math.ceil(widest(ay.values.map(String))) + 30;
    // about as wide as a line chart, so that three charts share a row
    var cellW = clamp(Math.floor((390 - yMargin) / nx), 16, ax.kind === 'string' ? 120 : 80), cellH = clamp(Math.floor(300 / ny), 14, 44);
    var xt = xTicks(ax, function (k) { return (k + 0.5) * cellW; }, nx * cellW);
    var marginLeft = Math.max(yMargin, xt.left), marginRight = Math.max(16, xt.right);
    var all = [];
    ax.values.forEach(function (x) { ay.values.forEach(function (s) { all.push({ x: x, s: s }); }); });
    var known = points.filter(function (p) { return view.value(p.r) !== null; });
    var marks = [
      Plot.cell(all, { x: 'x', y: 's', fill: '#eceff1', inset: 0.5, ariaDescription: 'no result' }),
      Plot.cell(known, { x: 'x', y: 's', ariaDescription: view.label, fill: function (p) { return view.value(p.r); }, inset: 0.5, title: function (p) { return p.title + '\\n' + view.describe(view.value(p.r), p.r) + verdictNote(p.r); } }),
      Plot.cell(points.filter(function (p) { return p.r.passes; }), { x: 'x', y: 's', fill: 'none', stroke: '#1d2330', strokeWidth: 2, inset: 2, ariaDescription: 'passes' }),
    ];
    // undecided: the seeds cannot yet tell whether it passes
    var undecided = points.filter(function (p) { return p.r.verdict === 'UNDECIDED'; });
    if (undecided.length > 0) {
      marks.push(Plot.cell(undecided, { x: 'x', y: 's', fill: 'none', stroke: '#1d2330', strokeWidth: 1.5, strokeDasharray: '4,3', inset: 2, ariaDescription: 'undecided' }));
    }
    var text = function (p) { return view.format(view.value(p.r)); };
    if (widest(points.map(text)) <= cellW - 4) {
      marks.push(Plot.text(points, { x: 'x', y: 's', fontSize: 11, fill: function (p) { return view.ink(view.value(p.r)); }, text: text }));
    }
    var hints = hintCells();
    if (hints.length > 0) {
      marks.push(Plot.text(hints, { x: 'x', y: 's', text: function () { return '\\u2605'; }, fontSize: 15, fill: '#1d2330', stroke: '#fff', strokeWidth: 1.5, paintOrder: 'stroke', dx: cellW / 2 - 8, dy: -cellH / 2 + 8, ariaDescription: 'hint' }));
    }
    return Plot.plot({
      width: marginLeft + nx * cellW + marginRight,
      height: 24 + ny * cellH + xt.bottom,
      marginLeft: marginLeft, marginBottom: xt.bottom, marginTop: 24, marginRight: marginRight,
      style: { fontSize: '11px' },
      x: { type: 'band', domain: ax.values, padding: 0, label: ax.path, labelAnchor: 'center', tickRotate: xt.rotate ? -40 : 0, ticks: xt.ticks.map(function (k) { return ax.values[k]; }), tickFormat: String },
      y: { type: 'band', domain: ay.values, padding: 0, label: ay.path, reverse: ay.kind === 'number', tickFormat: String },
      color: view.color,
      marks: marks,
    });
  }

  // The line charts' x axis, linear over positions: a name's index, or a number's value (its
  // log2 on a doubling grid, as Plot's log axis leaves out labels that are not 1, 2 or 5 times a
  // power of ten). position(value, index) places a point.
  function xAxis() {
    var ax = axes[state.x], v = ax.values, n = v.length;
    var position = function (x, k) { return k; };
    var domain = [-0.4, n - 0.6];
    if (ax.kind === 'number') {
      var ratios = v.slice(1).map(function (x, k) { return x / v[k]; });
      var log = v[0] > 0 && v[n - 1] / v[0] >= 4 && Math.max.apply(null, ratios) / Math.min.apply(null, ratios) < 1.5;
      position = function (x) { return log ? Math.log2(x) : x; };
      domain = n > 1 ? [position(v[0]), position(v[n - 1])] : [position(v[0]) - 1, position(v[0]) + 1];
    }
    var xt = xTicks(ax, function (k) { return (position(v[k], k) - domain[0]) / (domain[1] - domain[0]) * FRAME; }, FRAME);
    return {
      position: position,
      ticks: xt,
      scale: {
        type: 'linear', domain: domain, label: ax.path, labelAnchor: 'center', labelArrow: ax.kind === 'number',
        ticks: xt.ticks.map(function (k) { return position(v[k], k); }),
        tickFormat: function (_, i) { return xt.texts[xt.ticks[i]]; },
        tickRotate: xt.rotate ? -40 : 0,
      },
    };
  }

  // Whether the x axis holds names (router.policy): nothing lies between two of them, so their
  // values are points with interval bars, not lines and bands.
  function categoricalX() { return axes[state.x].kind === 'string'; }

  // spec: { value, lo, hi (functions of a row, or null), describe, y (scale options), goal, goalText }
  function lineChart(points, spec) {
    var series = state.y >= 0 ? axes[state.y] : null;
    var colour = series ? 's' : '#2f6db5';
    var z = series ? 's' : null;
    var x = xAxis();
    var categorical = categoricalX();
    // over names, each series a little apart, so that points at one name do not hide each other
    var n = series ? series.values.length : 1;
    var apart = function (si) { return categorical && n > 1 ? (si - (n - 1) / 2) * Math.min(0.15, 0.6 / n) : 0; };
    var rows = points.map(function (p) {
      return { x: x.position(p.x, p.xi) + apart(p.si), s: p.s, v: spec.value(p.r), lo: spec.lo ? spec.lo(p.r) : null, hi: spec.hi ? spec.hi(p.r) : null, title: p.title, hint: isHint(p.r.point), r: p.r };
    });
    // the goal rule goes under the data and its label in the right margin, where it hides no point
    var marks = [];
    if (spec.goal != null) marks.push(Plot.ruleY([spec.goal], { stroke: FAIL, strokeWidth: 1.5, strokeDasharray: '5,4' }));
    if (categorical) {
      if (spec.lo) marks.push(Plot.ruleX(rows.filter(function (d) { return d.lo !== null && d.hi !== null; }), { x: 'x', y1: 'lo', y2: 'hi', stroke: colour, strokeWidth: 2, strokeOpacity: 0.45 }));
    } else {
      if (spec.lo) marks.push(Plot.areaY(rows, { x: 'x', y1: 'lo', y2: 'hi', z: z, fill: colour, fillOpacity: 0.16 }));
      marks.push(Plot.lineY(rows, { x: 'x', y: 'v', z: z, stroke: colour, strokeWidth: 2 }));
    }
    marks.push(Plot.dot(rows, { x: 'x', y: 'v', fill: colour, r: categorical ? 3.5 : 2.5, title: function (d) { return d.title + '\\n' + spec.describe(d); } }));
    var hints = rows.filter(function (d) { return d.hint && d.v !== null; });
    if (hints.length > 0) marks.push(Plot.dot(hints, { x: 'x', y: 'v', r: 6, fill: 'none', stroke: '#1d2330', strokeWidth: 1.5, ariaDescription: 'hint' }));
    var goalWidth = 0;
    if (spec.goal != null) {
      goalWidth = widest([spec.goalText], BOLD);
      marks.push(Plot.text([spec.goal], { y: function (d) { return d; }, frameAnchor: 'right', textAnchor: 'start', dx: 6, fill: FAIL, fontWeight: 600, text: function () { return spec.goalText; }, ariaDescription: 'goal' }));
    }
    var marginLeft = Math.max(56, x.ticks.left), marginRight = Math.ceil(Math.max(18, x.ticks.right, goalWidth + 10));
    var options = {
      width: marginLeft + FRAME + marginRight, height: 218 + x.ticks.bottom,
      marginLeft: marginLeft, marginRight: marginRight, marginTop: 26, marginBottom: x.ticks.bottom,
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
      value: column('success'),
      lo: column('success_lo'),
      hi: column('success_hi'),
      describe: function (d) { return d.v === null ? 'no requests' : 'success ' + percent(d.v) + (d.lo === null ? '' : ' (' + percent(d.lo) + ' \\u2013 ' + percent(d.hi) + ')'); },
      y: { label: 'success (%)', percent: true, labelAnchor: 'top' },
      goal: goals ? goals.success : null,
      goalText: goals ? '\\u2265 ' + percent(goals.success) : '',
    });
  }

  function ms(name) {
    var get = column(name);
    return function (r) { var v = get(r); return v === null ? null : v / 1000; };
  }

  // The latency goals the charts hold each case to: end to end always, time to first token and
  // per output token where the problem sets them. name: the column (and goal); what: its label.
  var LATENCY_GOALS = [['p99_ms', 'p99', 'p99 latency'], ['ttft_p99_ms', 'ttft p99', 'TTFT p99'], ['tpot_p99_ms', 'tpot p99', 'TPOT p99']]
    .filter(function (g) { return g[0] === 'p99_ms' || (goals && goals[g[0]] != null); });

  // A latency quantile of the successes against x, with the spread of its per-seed values and its goal.
  function latencyChart(points, name, what) {
    var base = name.replace(/_ms$/, '');
    var goal = goals && goals[name] != null ? goals[name] / 1000 : null;
    return lineChart(points, {
      value: ms(name),
      lo: ms(base + '_lo_ms'),
      hi: ms(base + '_hi_ms'),
      describe: function (d) { return d.v === null ? 'no successes' : what + ' ' + seconds(d.v) + (d.lo === null ? '' : ' (' + seconds(d.lo) + ' \\u2013 ' + seconds(d.hi) + ')'); },
      y: { label: what + ' of successes (s)', zero: true },
      goal: goal,
      goalText: goal === null ? '' : '\\u2264 ' + seconds(goal),
    });
  }

  function metricChart(points, view) {
    return lineChart(points, {
      value: view.value, lo: null, hi: null,
      describe: function (d) { return view.describe(d.v, d.r); },
      y: { label: view.label, domain: view.domain },
      goal: view.goal,
      goalText: view.goalText,
    });
  }

  function figure(caption, chart, key) {
    var fig = el('figure', 'chart');
    // as wide as its widest drawing, and at least a line chart's 400 px: a long key or a row of
    // swatches wraps rather than push the next chart onto a new row
    var svgs = chart.tagName.toLowerCase() === 'svg' ? [chart] : Array.prototype.slice.call(chart.querySelectorAll('svg'));
    fig.style.width = Math.max.apply(null, [400].concat(svgs.map(function (svg) { return Number(svg.getAttribute('width')); }))) + 'px';
    var cap = el('figcaption', null, caption);
    if (key) cap.append(' ', el('span', 'hint-key', key));
    fig.append(cap, chart);
    return fig;
  }

  function badge(points) {
    if (points.length === 0) return el('span', 'badge none', 'no results here');
    var counts = verdictCounts(points.map(function (p) { return p.r; }));
    var kind = counts.pass > 0 ? 'pass' : counts.undecided > 0 ? 'undecided' : 'fail';
    return el('span', 'badge ' + kind, badgeText(counts));
  }

  // The chosen metric over both paths, or against x alone when only one path varies.
  function metricFigure(points, view, caption) {
    if (state.y >= 0) {
      var undecided = points.some(function (p) { return p.r.verdict === 'UNDECIDED'; });
      var key = 'outlined: passes' + (undecided ? '; dashed: undecided (within seed noise)' : '') + (hintCells().length ? '; \\u2605 the hint' : '');
      return figure(caption, heatmap(points, view), key);
    }
    return figure(caption, metricChart(points, view), lineKey(points, null, view.goal !== null));
  }

  // What a line chart's marks mean: series colour, band (bars over names), goal, hint rings.
  function lineKey(points, band, goal) {
    return [
      state.y >= 0 ? 'colour: ' + axes[state.y].path : null,
      band ? (categoricalX() ? 'bars: ' : 'band: ') + band : null,
      goal ? 'dashed: goal' : null,
      points.some(function (p) { return isHint(p.r.point); }) ? 'ringed: the hint' : null,
    ].filter(Boolean).join('; ');
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
        var worst = slicePoints(data.points);
        out.push(section('All cases', worst, [function () {
          return metricFigure(worst, metricView(passMetric, function (r) { return r.pass_probability; }), 'lowest pass probability over the cases');
        }]));
      }
      cases.forEach(function (name, c) {
        var points = slicePoints(byCase[c]);
        out.push(section(name, points, [
          function () { return metricFigure(points, metricView(metrics[state.metric]), metrics[state.metric].label); },
          function () { return figure('success', successChart(points), lineKey(points, 'across-seed interval', goals)); },
        ].concat(LATENCY_GOALS.map(function (g) {
          return function () { return figure(g[2], latencyChart(points, g[0], g[2]), lineKey(points, 'spread of per-seed ' + g[1], goals)); };
        }))));
      });
    }
    root.replaceChildren.apply(root, out);
  }

  // A hint's "show" button: its slice on every selector, then its first mark in view.
  document.querySelectorAll('button[data-hint]').forEach(function (button) {
    button.addEventListener('click', function () {
      state.fixed = data.hintPoints[Number(button.dataset.hint)].slice();
      update();
      var mark = root.querySelector('[aria-description="hint"]');
      if (mark) mark.scrollIntoView({ block: 'center' });
    });
  });

  try {
    update();
    document.documentElement.dataset.rendered = 'true';
  } catch (err) {
    root.replaceChildren(el('p', 'error', 'The charts could not be drawn: ' + (err && err.stack ? err.stack : String(err))));
    console.error(err);
  }
})();
`;
