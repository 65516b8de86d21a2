// The tune dashboard page: experiments, one experiment's views, one trial.
// Data comes from /api (tune dashboard, polled) or from window.TUNE_REPORT
// (tune report, inlined). Every string from the database is set as text
// (textContent, attributes built with encodeURIComponent), never as markup.
// Charts are Chart.js 3 (Debian's libjs-chart.js), configured only.
'use strict';
(function () {
  const REPORT = window.TUNE_REPORT || null;
  const POLL_MS = 2000;
  // Curves and parallel-coordinate lines drawn at most; past that the best
  // trials (and every running one) are drawn and the chart says so.
  const MAX_LINES = 1000;
  const STATE_COLORS = {
    completed: '#1f77b4', pruned: '#ff7f0e', failed: '#d62728',
    stopped: '#7f7f7f', running: '#2ca02c', pending: '#bcbd22', paused: '#9467bd',
  };
  const FINISHED = ['completed', 'pruned', 'failed', 'stopped'];

  Chart.defaults.animation = false;
  Chart.defaults.font.size = 11;
  Chart.defaults.plugins.legend.labels.boxWidth = 12;

  // Charts by name, so that a poll updates them in place (and tests can
  // read what they draw).
  const charts = {};
  window.tuneCharts = charts;
  let generation = 0;  // bumped on every navigation: stale answers are dropped
  let timer = null;

  // --- DOM helpers -------------------------------------------------------

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'onclick' || k === 'onchange') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function fmt(v) {
    if (v === null || v === undefined) return '—';
    if (typeof v === 'number') {
      if (Number.isInteger(v)) return String(v);
      return String(Number(v.toPrecision(6)));
    }
    return String(v);
  }

  function fmtDuration(s) {
    if (s === null || s === undefined || !isFinite(s)) return '—';
    if (s < 60) return s.toFixed(1) + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h' + String(Math.floor((s % 3600) / 60)).padStart(2, '0') + 'm';
    return Math.floor(s / 86400) + 'd' + String(Math.floor((s % 86400) / 3600)).padStart(2, '0') + 'h';
  }

  function fmtTime(t) {
    return t ? new Date(t * 1000).toLocaleString() : '—';
  }

  function expHref(name) { return '#/e/' + encodeURIComponent(name); }
  function trialHref(name, n) { return expHref(name) + '/t/' + n; }

  function showError(message) {
    const box = document.getElementById('error');
    box.textContent = message || '';
    box.hidden = !message;
  }

  function setStatus(text) { document.getElementById('status').textContent = text; }

  function setCrumbs(items) {
    const nav = document.getElementById('crumbs');
    nav.replaceChildren();
    items.forEach(([label, href], i) => {
      if (i) nav.appendChild(document.createTextNode(' / '));
      nav.appendChild(href ? el('a', { href, text: label }) : el('span', { text: label }));
    });
  }

  // --- Data --------------------------------------------------------------

  // The last tagged answer per path: asked again with If-None-Match, the
  // server answers 304 while the database is unchanged, and the same
  // object comes back (views skip redrawing it).
  const tagged = new Map();

  async function fetchJson(path) {
    const prev = tagged.get(path);
    const res = await fetch(path, { cache: 'no-store', headers: prev ? { 'If-None-Match': prev.etag } : {} });
    if (res.status === 304 && prev) return prev.body;
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) throw new Error((body && body.error) || (path + ': HTTP ' + res.status));
    const etag = res.headers.get('ETag');
    if (etag) tagged.set(path, { etag, body });
    else tagged.delete(path);
    return body;
  }

  function getExperiments() {
    return REPORT ? Promise.resolve(REPORT.experiments) : fetchJson('api/experiments');
  }
  function getExperiment(name) {
    if (REPORT) return Promise.resolve(REPORT.experiment);
    return fetchJson('api/experiment?name=' + encodeURIComponent(name));
  }
  function getTrial(name, number) {
    if (REPORT) {
      const t = REPORT.trials[String(number)];
      return t ? Promise.resolve(t) : Promise.reject(new Error('no trial ' + number + ' in this report'));
    }
    return fetchJson('api/trial?experiment=' + encodeURIComponent(name) + '&number=' + number);
  }

  // --- Charts ------------------------------------------------------------

  // Creates the chart on first use; later calls replace its data and
  // options and redraw it without animation.
  function drawChart(key, canvas, config) {
    const old = charts[key];
    if (old && old.canvas === canvas) {
      old.data = config.data;
      old.options = config.options;
      old.update('none');
      return old;
    }
    if (old) old.destroy();
    charts[key] = new Chart(canvas, config);
    return charts[key];
  }

  function destroyCharts() {
    for (const k of Object.keys(charts)) {
      charts[k].destroy();
      delete charts[k];
    }
  }

  function chartBox(title, note) {
    const canvas = el('canvas');
    const noteEl = el('div', { class: 'note', text: note || '' });
    const card = el('section', { class: 'card' }, el('h3', { text: title }), noteEl, el('div', { class: 'chart' }, canvas));
    return { card, canvas, noteEl };
  }

  // "better" comparator for the experiment's direction.
  function better(mode) { return mode === 'max' ? (a, b) => a > b : (a, b) => a < b; }

  // The trials to draw as lines: all when few; else every running one and
  // the best finished ones by value.
  function pickLines(rows, mode) {
    if (rows.length <= MAX_LINES) return rows;
    const running = rows.filter((r) => r.state === 'running');
    const rest = rows.filter((r) => r.state !== 'running' && r.value !== null);
    rest.sort((a, b) => (mode === 'max' ? b.value - a.value : a.value - b.value));
    return running.concat(rest).slice(0, MAX_LINES);
  }

  function historyChart(view, exp) {
    const rows = exp.trial_rows.filter((r) => r.value !== null);
    const datasets = [];
    for (const state of Object.keys(STATE_COLORS)) {
      const pts = rows.filter((r) => r.state === state).map((r) => ({ x: r.number, y: r.value }));
      if (!pts.length) continue;
      datasets.push({
        type: 'scatter', label: state, data: pts, tuneState: state,
        backgroundColor: STATE_COLORS[state], borderColor: STATE_COLORS[state], pointRadius: 3,
      });
    }
    const isBetter = better(exp.mode);
    let best = null;
    const bestPts = [];
    for (const r of rows) {
      if (r.state !== 'completed') continue;
      if (best === null || isBetter(r.value, best)) best = r.value;
      bestPts.push({ x: r.number, y: best });
    }
    datasets.push({
      type: 'line', label: 'best so far', data: bestPts, tuneBest: true, stepped: true,
      borderColor: '#263238', backgroundColor: '#263238', pointRadius: 0, borderWidth: 1.5,
    });
    drawChart('history', view.history.canvas, {
      type: 'scatter',
      data: { datasets },
      options: {
        maintainAspectRatio: false,
        scales: { x: { title: { display: true, text: 'trial' } }, y: { title: { display: true, text: exp.metric } } },
      },
    });
  }

  function milestonesOf(exp) {
    const s = exp.scheduler || {};
    const all = new Set();
    for (const bracket of s.milestones || []) for (const m of bracket) all.add(m);
    return Array.from(all).sort((a, b) => a - b);
  }

  function curvesChart(view, exp) {
    const rows = pickLines(exp.trial_rows.filter((r) => exp.curves[String(r.number)]), exp.mode);
    const datasets = [];
    let lo = Infinity, hi = -Infinity;
    for (const r of rows) {
      const curve = exp.curves[String(r.number)];
      const pts = curve.filter((p) => p[1] !== null).map((p) => ({ x: p[0], y: p[1] }));
      for (const p of pts) { lo = Math.min(lo, p.y); hi = Math.max(hi, p.y); }
      const color = STATE_COLORS[r.state] || '#999';
      const pruned = r.state === 'pruned';
      // A pruned trial's curve ends in a marker at the rung it was stopped at.
      const radius = pts.map((_, i) => (pruned && i === pts.length - 1 ? 6 : 0));
      datasets.push({
        label: 'trial ' + r.number, data: pts, tuneTrial: r.number, tuneState: r.state,
        tunePrunedRung: r.pruned_rung, borderColor: color + (pruned ? 'aa' : 'cc'), backgroundColor: color,
        borderWidth: 1, pointRadius: radius, pointHoverRadius: 4, pointStyle: 'crossRot',
        pointBorderWidth: 2, pointBorderColor: color,
      });
    }
    const milestones = milestonesOf(exp);
    if (isFinite(lo)) {
      for (const m of milestones) {
        datasets.push({
          label: 'rung ' + m, data: [{ x: m, y: lo }, { x: m, y: hi }], tuneMilestone: m,
          borderColor: '#90a4ae', borderDash: [5, 4], borderWidth: 1, pointRadius: 0,
        });
      }
    }
    const n = Object.keys(exp.curves).length;
    view.curves.noteEl.textContent =
      (milestones.length ? 'ASHA rungs (dashed) at ' + milestones.join(', ') + '; pruned trials end in ×. ' : '') +
      (n > rows.length ? 'Showing ' + rows.length + ' of ' + n + ' curves (the running and the best).' : '');
    drawChart('curves', view.curves.canvas, {
      type: 'line',
      data: { datasets },
      options: {
        maintainAspectRatio: false, parsing: true, spanGaps: true,
        plugins: { legend: { display: false } },
        scales: {
          x: { type: 'linear', title: { display: true, text: (exp.scheduler && exp.scheduler.time_attr) || 'step' } },
          y: { title: { display: true, text: exp.metric } },
        },
      },
    });
  }

  // Position of `v` on parameter axis `p`, in [0, 1].
  function normalise(p, v) {
    if (v === undefined || v === null) return null;
    if (p.type === 'choice') {
      const i = p.choices.findIndex((c) => c === v);
      return p.choices.length > 1 ? i / (p.choices.length - 1) : 0.5;
    }
    if (p.high === p.low) return 0.5;
    if (p.log) return (Math.log(v) - Math.log(p.low)) / (Math.log(p.high) - Math.log(p.low));
    return (v - p.low) / (p.high - p.low);
  }

  // Parallel coordinates as a line chart: one category axis per parameter
  // (plus the objective), each scaled to [0, 1]; one line per trial,
  // coloured from best (dark blue) to worst (light).
  function parallelChart(view, exp) {
    const rows = pickLines(exp.trial_rows.filter((r) => r.value !== null && r.state === 'completed'), exp.mode);
    const params = exp.parameters;
    const labels = params.map((p) => p.name).concat([exp.metric]);
    const values = rows.map((r) => r.value);
    const vlo = Math.min(...values), vhi = Math.max(...values);
    const datasets = rows.map((r) => {
      const vn = vhi > vlo ? (r.value - vlo) / (vhi - vlo) : 0.5;
      const goodness = exp.mode === 'max' ? vn : 1 - vn;
      const color = 'hsla(' + Math.round(210 - 170 * (1 - goodness)) + ',70%,' + Math.round(30 + 40 * (1 - goodness)) + '%,0.6)';
      return {
        label: 'trial ' + r.number,
        data: params.map((p) => normalise(p, r.params[p.name])).concat([vn]),
        tuneRaw: params.map((p) => r.params[p.name]).concat([r.value]),
        borderColor: color, backgroundColor: color, borderWidth: 1, pointRadius: 0, pointHoverRadius: 3,
      };
    });
    const axisNotes = params.map((p) => p.name + ': ' + (p.type === 'choice'
      ? p.choices.map(fmt).join(' | ')
      : fmt(p.low) + ' … ' + fmt(p.high) + (p.log ? ' (log)' : '')));
    view.parallel.noteEl.textContent = 'Axes bottom to top: ' + axisNotes.join('; ') + '; ' + exp.metric + ': ' +
      fmt(vlo) + ' … ' + fmt(vhi) + '.' + (rows.length < exp.trial_rows.length && exp.trial_rows.length > MAX_LINES
        ? ' Showing the best ' + rows.length + '.' : '');
    drawChart('parallel', view.parallel.canvas, {
      type: 'line',
      data: { labels, datasets },
      options: {
        maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: false },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: (ctx) => ctx.dataset.label + ': ' + labels[ctx.dataIndex] + ' = ' +
                fmt(ctx.dataset.tuneRaw[ctx.dataIndex]),
            },
          },
        },
        scales: {
          x: { grid: { color: '#607d8b', lineWidth: 1 } },
          y: { min: 0, max: 1, ticks: { display: false }, grid: { display: false } },
        },
      },
    });
  }

  function sliceCharts(view, exp) {
    const rows = exp.trial_rows.filter((r) => r.value !== null && r.state === 'completed');
    if (view.slices.childElementCount !== exp.parameters.length) {
      view.slices.replaceChildren();
      for (const p of exp.parameters) {
        const canvas = el('canvas');
        view.slices.appendChild(el('div', { class: 'card' }, el('h3', { text: p.name }), el('div', { class: 'chart' }, canvas)));
      }
    }
    exp.parameters.forEach((p, i) => {
      const canvas = view.slices.children[i].querySelector('canvas');
      const choice = p.type === 'choice';
      const labels = choice ? p.choices.map((c) => String(c)) : undefined;
      const pts = rows.map((r) => ({ x: choice ? String(r.params[p.name]) : r.params[p.name], y: r.value, n: r.number }));
      drawChart('slice:' + p.name, canvas, {
        type: 'scatter',
        data: {
          labels,
          datasets: [{
            label: p.name, data: pts, backgroundColor: '#1f77b4aa', borderColor: '#1f77b4', pointRadius: 3,
          }],
        },
        options: {
          maintainAspectRatio: false,
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: (ctx) => 'trial ' + ctx.raw.n + ': ' + p.name + ' = ' + fmt(ctx.raw.x) + ', ' + exp.metric + ' = ' + fmt(ctx.raw.y) } },
          },
          scales: {
            x: { type: choice ? 'category' : p.log ? 'logarithmic' : 'linear', title: { display: true, text: p.name } },
            y: { title: { display: true, text: exp.metric } },
          },
        },
      });
    });
  }

  function importanceChart(view, exp) {
    const imp = exp.importance || {};
    if (imp.error) {
      view.importance.noteEl.textContent = 'Not available yet: ' + imp.error;
      if (charts.importance) { charts.importance.destroy(); delete charts.importance; }
      return;
    }
    view.importance.noteEl.textContent = 'PED-ANOVA over ' + imp.trials + ' completed trials (what sets the best ' +
      imp.top_trials + ' apart)' + (imp.top_trials < 5 ? '; rough below 5 top trials.' : '.');
    drawChart('importance', view.importance.canvas, {
      type: 'bar',
      data: {
        labels: imp.importances.map((p) => p.parameter),
        datasets: [{ label: 'importance', data: imp.importances.map((p) => p.importance), backgroundColor: '#42a5f5' }],
      },
      options: {
        indexAxis: 'y', maintainAspectRatio: false,
        plugins: { legend: { display: false } },
        scales: { x: { min: 0, max: 1 } },
      },
    });
  }

  // --- Several objectives: the Pareto front and the hypervolume ----------

  // The objective pairs to scatter: the first two; with 3 or 4 objectives
  // every pair (a matrix of scatters, upper triangle).
  function objectivePairs(exp) {
    const m = exp.objectives.length;
    const pairs = [];
    for (let i = 0; i < m; ++i) for (let j = i + 1; j < m; ++j) pairs.push([i, j]);
    return m === 2 ? pairs.slice(0, 1) : pairs;
  }

  function objectiveLabel(o) { return o.metric + ' (' + o.mode + ')'; }

  // One scatter per pair: every feasible completed trial (grey, the front's
  // points blue), infeasible ones as red crosses, and the front as a step
  // line through its points in the order of the pair's first objective.
  function paretoCharts(view, exp) {
    const p = exp.pareto;
    const pairs = objectivePairs(exp);
    const byNumber = new Map(exp.trial_rows.map((r) => [r.number, r]));
    const onFront = new Set(p.front.map((f) => f.number));
    if (view.pareto.grid.childElementCount !== pairs.length) {
      view.pareto.grid.replaceChildren();
      for (const [i, j] of pairs) {
        const box = chartBox(exp.objectives[j].metric + ' against ' + exp.objectives[i].metric);
        box.canvas.id = 'pareto-' + i + '-' + j;
        view.pareto.grid.appendChild(box.card);
      }
    }
    view.pareto.grid.className = pairs.length > 1 ? 'grid pairs' : 'grid';
    view.pareto.noteEl.textContent = p.front.length + ' trial' + (p.front.length === 1 ? '' : 's') +
      ' on the Pareto front of ' + p.feasible.length + ' feasible completed' +
      (p.infeasible.length ? ' (' + p.infeasible.length + ' infeasible, red ×)' : '') +
      (pairs.length > 1 ? '; the front (blue) is non-dominated in all ' + exp.objectives.length +
        ' objectives, so in a pair a front point may lie behind others.' : '; the step line joins the front.');
    const point = (r, i, j) => ({ x: r.values[i], y: r.values[j], n: r.number });
    const rowsOf = (numbers) => numbers.map((n) => byNumber.get(n)).filter((r) => r && r.values);
    pairs.forEach(([i, j], k) => {
      const canvas = view.pareto.grid.children[k].querySelector('canvas');
      const feasible = rowsOf(p.feasible);
      const front = p.front.map((f) => ({ x: f.values[i], y: f.values[j], n: f.number }));
      if (i !== 0) {  // the step line in the order of this pair's first objective
        const sign = exp.objectives[i].mode === 'max' ? -1 : 1;
        front.sort((a, b) => sign * (a.x - b.x) || a.n - b.n);
      }
      const datasets = [
        {
          type: 'line', label: 'Pareto front', data: front, tunePareto: 'front', stepped: 'before',
          showLine: pairs.length === 1,
          borderColor: '#1f77b4', backgroundColor: '#1f77b4', pointRadius: 4, borderWidth: 1.5, order: 0,
        },
        {
          type: 'scatter', label: 'feasible', data: feasible.filter((r) => !onFront.has(r.number)).map((r) => point(r, i, j)),
          tunePareto: 'feasible', backgroundColor: '#90a4ae99', borderColor: '#90a4ae', pointRadius: 3, order: 1,
        },
        {
          type: 'scatter', label: 'infeasible', data: rowsOf(p.infeasible).map((r) => point(r, i, j)),
          tunePareto: 'infeasible', pointStyle: 'crossRot', pointRadius: 5, pointBorderWidth: 2,
          backgroundColor: '#d62728', borderColor: '#d62728', order: 2,
        },
      ];
      drawChart('pareto:' + i + '-' + j, canvas, {
        type: 'scatter',
        data: { datasets },
        options: {
          maintainAspectRatio: false,
          plugins: {
            tooltip: { callbacks: { label: (ctx) => 'trial ' + ctx.raw.n + ': ' + exp.objectives[i].metric + ' = ' +
              fmt(ctx.raw.x) + ', ' + exp.objectives[j].metric + ' = ' + fmt(ctx.raw.y) } },
          },
          scales: {
            x: { type: 'linear', title: { display: true, text: objectiveLabel(exp.objectives[i]) } },
            y: { type: 'linear', title: { display: true, text: objectiveLabel(exp.objectives[j]) } },
          },
        },
      });
    });
  }

  // The hypervolume of the front so far, after each feasible completed trial.
  function hypervolumeChart(view, exp) {
    const p = exp.pareto;
    view.hypervolume.noteEl.textContent = !p.feasible.length ? 'No feasible completed trial yet.'
      : 'The hypervolume of the front of the feasible trials completed so far, against the ' + p.reference_text +
        (p.hypervolume !== null ? '; now ' + fmt(p.hypervolume) : '') + '.';
    drawChart('hypervolume', view.hypervolume.canvas, {
      type: 'line',
      data: {
        datasets: [{
          label: 'hypervolume', data: p.hypervolume_curve.map((c) => ({ x: c[0], y: c[1] })), stepped: 'before',
          borderColor: '#263238', backgroundColor: '#263238', pointRadius: 2, borderWidth: 1.5,
        }],
      },
      options: {
        maintainAspectRatio: false,
        plugins: { legend: { display: false } },
        scales: { x: { type: 'linear', title: { display: true, text: 'trial' } }, y: { title: { display: true, text: 'hypervolume' } } },
      },
    });
  }

  // --- Trial table -------------------------------------------------------

  function trialTable(view, exp) {
    const t = view.table;
    const paramNames = exp.parameters.map((p) => p.name);
    const objectives = exp.objectives || null;
    const onFront = new Set(exp.pareto ? exp.pareto.front.map((f) => f.number) : []);
    const columns = [
      ['number', (r) => r.number, true],
      ['state', (r) => r.state, false],
      ...(objectives
        ? objectives.map((o, i) => [o.metric, (r) => (r.values ? r.values[i] : null), true])
          .concat([['front', (r) => (onFront.has(r.number) ? 'yes' : null), false]])
        : [['value', (r) => r.value, true]]),
      ...(exp.constraints ? [['feasible', (r) => (r.feasible === null || r.feasible === undefined ? null : r.feasible ? 'yes' : 'no'), false]] : []),
      ...paramNames.map((n) => [n, (r) => r.params[n], typeof (exp.trial_rows[0] || { params: {} }).params[n] === 'number']),
      ['last step', (r) => r.last_step, true],
      ['pruned at rung', (r) => r.pruned_rung, true],
      ['attempts', (r) => r.attempts, true],
      ['duration', (r) => (r.started_at ? (r.ended_at || Date.now() / 1000) - r.started_at : null), true],
      ['message', (r) => r.message, false],
    ];
    let rows = exp.trial_rows.filter((r) => !t.state || r.state === t.state);
    const [, key] = columns.find((c) => c[0] === t.sort) || columns[0];
    rows = rows.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === y) return a.number - b.number;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * t.dir;
    });
    const shown = t.all ? rows : rows.slice(0, 500);
    const head = el('tr', null, ...columns.map(([name]) => el('th', {
      text: name + (t.sort === name ? (t.dir > 0 ? ' ▲' : ' ▼') : ''),
      onclick: () => { t.dir = t.sort === name ? -t.dir : 1; t.sort = name; trialTable(view, exp); },
    })));
    const body = shown.map((r) => el('tr', { 'data-number': String(r.number) }, ...columns.map(([name, f, numeric]) => {
      const v = f(r);
      if (name === 'number') return el('td', { class: 'num' }, el('a', { href: trialHref(exp.name, r.number), text: String(r.number) }));
      if (name === 'state') return el('td', { class: 'state-' + r.state, text: r.state });
      if (name === 'duration') return el('td', { class: 'num', text: fmtDuration(v) });
      return el('td', { class: name === 'message' ? 'msg' : numeric ? 'num' : '', text: fmt(v) });
    })));
    t.tableEl.replaceChildren(el('thead', null, head), el('tbody', null, ...body));
    t.countEl.textContent = rows.length + ' trial' + (rows.length === 1 ? '' : 's') +
      (shown.length < rows.length ? ', the first ' + shown.length + ' shown ' : '');
    t.moreEl.hidden = shown.length >= rows.length;
  }

  // --- Population Based Training: schedules and lineage --------------------

  // "lr=0.01, lora_r=8" for the parameters of `params` (all, or `only`).
  function paramsText(params, only) {
    return Object.keys(params).filter((k) => !only || only.includes(k)).map((k) => k + '=' + fmt(params[k])).join(', ');
  }

  // The parameters whose value changes anywhere along `schedule`.
  function mutatedParams(schedule) {
    const names = [];
    for (const k of Object.keys(schedule[0].params)) {
      if (schedule.some((e) => JSON.stringify(e.params[k]) !== JSON.stringify(schedule[0].params[k]))) names.push(k);
    }
    return names;
  }

  // A schedule as a list: "from step S: params (from trial D's checkpoint-S)",
  // the donor linked to its trial page.
  function scheduleList(name, schedule, id) {
    return el('ol', { class: 'schedule', id }, ...schedule.map((e) => el('li', null,
      'from step ' + e.step + ': ' + paramsText(e.params),
      e.donor === null ? null : el('span', null, ' (from ',
        el('a', { href: trialHref(name, e.donor), text: 'trial ' + e.donor }),
        '\'s checkpoint-' + e.donor_step + (e.at_step !== null ? ', at its own step ' + e.at_step : '') + ')'))));
  }

  // Who took whose checkpoint at what step: one row per exploit, in order.
  function lineageTable(view, exp) {
    const lineage = exp.lineage || [];
    view.lineage.card.hidden = !lineage.length;
    const best = exp.best_schedule;
    view.lineage.best.replaceChildren();
    if (best && best.length > 1 && exp.best) {
      view.lineage.best.append(el('p', { text: 'The best trial (' + exp.best.number + ') ran this schedule:' }),
        scheduleList(exp.name, best, 'best-schedule'));
    }
    if (!lineage.length) return;
    const head = el('tr', null, ...['trial', 'at its step', 'took the checkpoint of', 'at step', 'changed']
      .map((h) => el('th', { text: h })));
    const rows = lineage.map((x) => {
      const changed = Object.keys(x.after).filter((k) => JSON.stringify(x.after[k]) !== JSON.stringify(x.before[k]));
      return el('tr', { 'data-trial': String(x.trial) },
        el('td', { class: 'num' }, el('a', { href: trialHref(exp.name, x.trial), text: String(x.trial) })),
        el('td', { class: 'num', text: String(x.at_step) }),
        el('td', { class: 'num' }, el('a', { href: trialHref(exp.name, x.donor), text: 'trial ' + x.donor })),
        el('td', { class: 'num', text: String(x.donor_step) }),
        el('td', { text: changed.map((k) => k + ' ' + fmt(x.before[k]) + ' → ' + fmt(x.after[k])).join(', ') || '—' }));
    });
    view.lineage.table.replaceChildren(el('thead', null, head), el('tbody', null, ...rows));
  }

  // The trial's parameters over steps: one step chart per parameter that
  // its schedule changed; each change marks the donor it came from.
  function scheduleCharts(box, t) {
    const schedule = t.schedule || [];
    const names = schedule.length > 1 ? mutatedParams(schedule) : [];
    box.hidden = !names.length;
    if (!names.length) { box.replaceChildren(); return; }
    const end = Math.max(t.last_step || 0, schedule[schedule.length - 1].step);
    if (box.dataset.names !== names.join('\u0000')) {
      box.replaceChildren(el('h3', { text: 'Parameters over steps (Population Based Training)' }),
        scheduleList(t.experiment, schedule, 'trial-schedule'), el('div', { class: 'grid' }));
      box.dataset.names = names.join('\u0000');
      for (const n of names) box.lastChild.appendChild(chartBox(n).card);
    } else {
      box.children[1].replaceWith(scheduleList(t.experiment, schedule, 'trial-schedule'));
    }
    names.forEach((n, i) => {
      const canvas = box.lastChild.children[i].querySelector('canvas');
      const numeric = schedule.every((e) => typeof e.params[n] === 'number');
      const pts = schedule.map((e) => ({ x: e.step, y: numeric ? e.params[n] : String(e.params[n]), donor: e.donor }));
      pts.push({ x: end, y: pts[pts.length - 1].y, donor: null });
      const labels = numeric ? undefined : Array.from(new Set(pts.map((p) => p.y)));
      drawChart('schedule:' + n, canvas, {
        type: 'line',
        data: {
          datasets: [{
            label: n, data: pts, stepped: true, tuneSchedule: n, borderColor: '#9467bd', backgroundColor: '#9467bd',
            pointRadius: pts.map((p, j) => (j > 0 && j < pts.length - 1 ? 4 : 0)),
          }],
        },
        options: {
          maintainAspectRatio: false,
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: (ctx) => n + ' = ' + fmt(ctx.raw.y) + ' from step ' + ctx.raw.x +
              (ctx.raw.donor !== null && ctx.raw.donor !== undefined ? ' (trial ' + ctx.raw.donor + '\'s checkpoint)' : '') } },
          },
          scales: {
            x: { type: 'linear', title: { display: true, text: 'step' } },
            y: numeric ? { title: { display: true, text: n } } : { type: 'category', labels, title: { display: true, text: n } },
          },
        },
      });
    });
  }

  // --- Views -------------------------------------------------------------

  async function experimentsView(gen) {
    setCrumbs([]);
    document.title = 'tune dashboard';
    const main = document.getElementById('main');
    const table = el('table', { id: 'experiments' });
    main.replaceChildren(el('h2', { text: 'Experiments' }), table);
    const refresh = async () => {
      const list = await getExperiments();
      if (gen !== generation) return;
      const states = FINISHED.concat(['running', 'paused', 'pending']);
      const head = el('tr', null, ...['name', 'state', 'trials'].concat(states, ['best', 'started', 'duration'])
        .map((h) => el('th', { text: h })));
      const rows = list.map((e) => el('tr', null,
        el('td', null, el('a', { href: expHref(e.name), text: e.name })),
        el('td', { class: 'state-' + e.state, text: e.state, title: e.message }),
        el('td', { class: 'num', text: String(e.trials) }),
        ...states.map((s) => el('td', { class: 'num', text: String(e.counts[s]) })),
        el('td', { class: 'num', text: e.objectives ? e.front_size + ' on the Pareto front'
          : e.best ? fmt(e.best.value) + ' (trial ' + e.best.number + ')' : '—' }),
        el('td', { text: fmtTime(e.created_at) }),
        el('td', { class: 'num', text: fmtDuration(e.run_seconds) })));
      table.replaceChildren(el('thead', null, head), el('tbody', null, ...rows));
      if (!list.length) table.replaceChildren(el('tr', null, el('td', { text: 'No experiments in this database yet.' })));
    };
    return refresh;
  }

  async function experimentView(gen, name) {
    setCrumbs([[name, null]]);
    document.title = name + ' · tune';
    const main = document.getElementById('main');
    const view = {
      summary: el('div', { class: 'summary' }),
      history: chartBox('Optimization history', 'Each trial\'s value, coloured by state; the line is the best so far.'),
      curves: chartBox('Intermediate values'),
      parallel: chartBox('Parallel coordinates'),
      importance: chartBox('Parameter importances'),
      slices: el('div', { class: 'slices' }),
      pareto: { card: el('section', { class: 'card', id: 'pareto' }), grid: el('div', { class: 'grid' }),
        noteEl: el('div', { class: 'note' }) },
      hypervolume: chartBox('Hypervolume'),
      lineage: { card: el('section', { class: 'card', id: 'lineage' }), table: el('table', { id: 'lineage-table' }),
        best: el('div') },
      table: { sort: 'number', dir: 1, state: '', all: false, tableEl: el('table', { id: 'trials' }), countEl: el('span'), moreEl: null },
    };
    view.history.canvas.id = 'history';
    view.hypervolume.canvas.id = 'hypervolume';
    view.pareto.card.append(el('h3', { text: 'Pareto front' }), view.pareto.noteEl, view.pareto.grid);
    view.pareto.card.hidden = true;
    view.hypervolume.card.hidden = true;
    view.curves.canvas.id = 'curves';
    const stateSelect = el('select', { id: 'state-filter', onchange: (ev) => { view.table.state = ev.target.value; trialTable(view, last); } },
      el('option', { value: '', text: 'all states' }), ...Object.keys(STATE_COLORS).map((s) => el('option', { value: s, text: s })));
    view.table.moreEl = el('button', { text: 'show all', onclick: () => { view.table.all = true; trialTable(view, last); } });
    main.replaceChildren(
      el('h2', { text: name }), view.summary,
      view.pareto.card,
      el('div', { class: 'grid' }, view.hypervolume.card, view.history.card, view.curves.card, view.parallel.card,
        view.importance.card),
      view.lineage.card,
      el('h3', { text: 'Slice plots' }), view.slices,
      el('h3', { text: 'Trials' }),
      el('div', { class: 'toolbar' }, stateSelect, view.table.countEl, view.table.moreEl),
      view.table.tableEl);
    view.lineage.card.append(el('h3', { text: 'Lineage (Population Based Training)' }),
      el('div', { class: 'note', text: 'Each exploit: a trial stopped at its step and continued from another trial\'s checkpoint with new parameters.' }),
      view.lineage.best, view.lineage.table);
    view.lineage.card.hidden = true;
    let last = null;
    return async () => {
      const t0 = performance.now();
      const exp = await getExperiment(name);
      performance.measure('tune:fetch', { start: t0, end: performance.now() });
      if (gen !== generation || exp === last) return;  // unchanged: nothing to redraw
      last = exp;
      const c = exp.counts;
      view.summary.textContent = exp.state + (exp.message ? ' (' + exp.message + ')' : '') + ' · ' + exp.trials +
        ' trials: ' + FINISHED.concat(['running', 'paused', 'pending']).filter((s) => c[s]).map((s) => c[s] + ' ' + s).join(', ') +
        (exp.objectives
          ? ' · objectives ' + exp.objectives.map(objectiveLabel).join(', ') + ' · ' + exp.pareto.front.length +
            ' on the Pareto front'
          : ' · objective ' + exp.metric + ' (' + exp.mode + ')' +
            (exp.best ? ' · best ' + fmt(exp.best.value) + ' (trial ' + exp.best.number + ')' : '')) +
        ' · scheduler ' + exp.scheduler.type + ' · ' + fmtDuration(exp.run_seconds);
      // Each part timed (performance.measure "tune:<part>", for the bench).
      const several = !!exp.pareto;
      view.pareto.card.hidden = !several;
      view.hypervolume.card.hidden = !several;
      const parts = (several ? [['pareto', paretoCharts], ['hypervolume', hypervolumeChart]] : []).concat([
        ['history', historyChart], ['curves', curvesChart], ['parallel', parallelChart], ['importance', importanceChart],
        ['slices', sliceCharts], ['lineage', lineageTable], ['table', trialTable]]);
      for (const [part, draw] of parts) {
        const t0 = performance.now();
        draw(view, exp);
        performance.measure('tune:' + part, { start: t0, end: performance.now() });
      }
      document.body.dataset.trials = String(exp.trials);
    };
  }

  async function trialView(gen, name, number) {
    setCrumbs([[name, expHref(name)], ['trial ' + number, null]]);
    document.title = name + ' trial ' + number + ' · tune';
    const main = document.getElementById('main');
    const info = el('table', { id: 'trial-info' });
    const params = el('table', { id: 'trial-params' });
    const metrics = el('div', { class: 'grid' });
    const schedule = el('div', { id: 'trial-schedule-box', hidden: '' });
    const logs = el('div');
    main.replaceChildren(el('h2', { text: name + ' · trial ' + number }),
      el('div', { class: 'grid' }, el('section', { class: 'card' }, el('h3', { text: 'Trial' }), info),
        el('section', { class: 'card' }, el('h3', { text: 'Parameters' }), params)),
      schedule, el('h3', { text: 'Metrics' }), metrics, el('h3', { text: 'Logs' }), logs);
    return async () => {
      const t = await getTrial(name, number);
      if (gen !== generation) return;
      const kv = (k, v, cls) => el('tr', null, el('th', { text: k }), el('td', { class: cls || '', text: v }));
      const values = t.objectives
        ? t.objectives.map((o, i) => kv(o.metric + ' (' + o.mode + ')', fmt(t.values ? t.values[i] : null)))
        : [kv('value (' + t.metric + ')', fmt(t.value))];
      if (t.constraints) {
        values.push(kv('feasible', t.feasible === null || t.feasible === undefined ? '—' : t.feasible ? 'yes' : 'no'));
      }
      info.replaceChildren(kv('state', t.state, 'state-' + t.state), ...values,
        kv('attempts', String(t.attempts) + (t.failed_attempts ? ' (' + t.failed_attempts + ' failed and retried)' : '')), kv('last step', fmt(t.last_step)), kv('pruned at rung', fmt(t.pruned_rung)),
        kv('started', fmtTime(t.started_at)), kv('ended', fmtTime(t.ended_at)), kv('where', t.location),
        kv('message', t.message || '—'));
      params.replaceChildren(...Object.entries(t.params).map(([k, v]) => kv(k, fmt(v))));
      scheduleCharts(schedule, t);
      // One chart per metric: each attempt a line; reports that do not count
      // (after max_t) as separate, marked points.
      const names = [];
      for (const r of t.reports) for (const m of Object.keys(r.metrics)) if (!names.includes(m)) names.push(m);
      names.sort((a, b) => (a === t.metric ? -1 : b === t.metric ? 1 : a < b ? -1 : 1));
      if (metrics.childElementCount !== names.length) {
        metrics.replaceChildren();
        for (const m of names) metrics.appendChild(chartBox(m).card);
      }
      names.forEach((m, i) => {
        const canvas = metrics.children[i].querySelector('canvas');
        const datasets = [];
        const attempts = Array.from(new Set(t.reports.map((r) => r.attempt)));
        for (const a of attempts) {
          const counted = t.reports.filter((r) => r.attempt === a && !r.excluded && r.metrics[m] !== undefined);
          datasets.push({
            label: 'attempt ' + a + (a === t.current_attempt ? '' : ' (retried)'),
            data: counted.map((r) => ({ x: r.step, y: r.metrics[m] })),
            borderColor: a === t.current_attempt ? '#1f77b4' : '#b0bec5', backgroundColor: '#1f77b4', pointRadius: 2,
          });
        }
        const excluded = t.reports.filter((r) => r.excluded && r.metrics[m] !== undefined);
        if (excluded.length) {
          datasets.push({
            label: 'not counted (' + excluded[0].excluded + ')', data: excluded.map((r) => ({ x: r.step, y: r.metrics[m] })),
            tuneExcluded: true, showLine: false, pointStyle: 'triangle', pointRadius: 5,
            borderColor: '#d62728', backgroundColor: '#d6272855',
          });
        }
        drawChart('metric:' + m, canvas, {
          type: 'line',
          data: { datasets },
          options: { maintainAspectRatio: false, scales: { x: { type: 'linear', title: { display: true, text: 'step' } } } },
        });
      });
      logs.replaceChildren(...t.logs.map((l) => el('div', null,
        el('h3', { text: 'rank ' + l.rank + ' · ' + l.file + (l.truncated ? ' (last ' + l.lines.length + ' lines)' : '') }),
        el('pre', { class: 'log', text: l.error ? '(' + l.error + ')' : l.missing ? '(no log file)' : l.lines.join('\n') }))));
    };
  }

  // --- Routing and polling -----------------------------------------------

  function parseRoute() {
    const h = location.hash.replace(/^#/, '');
    let m = h.match(/^\/e\/([^/]+)\/t\/(\d+)$/);
    if (m) return { view: 'trial', name: decodeURIComponent(m[1]), number: Number(m[2]) };
    m = h.match(/^\/e\/([^/]+)$/);
    if (m) return { view: 'experiment', name: decodeURIComponent(m[1]) };
    if (REPORT) return { view: 'experiment', name: REPORT.experiment.name };
    return { view: 'experiments' };
  }

  async function navigate() {
    generation += 1;
    const gen = generation;
    if (timer) clearTimeout(timer);
    destroyCharts();
    showError('');
    const route = parseRoute();
    const refresh = route.view === 'trial' ? await trialView(gen, route.name, route.number)
      : route.view === 'experiment' ? await experimentView(gen, route.name)
        : await experimentsView(gen);
    const tick = async () => {
      if (gen !== generation) return;
      const started = performance.now();
      try {
        await refresh();
        if (gen !== generation) return;
        showError('');
        setStatus(REPORT ? 'report written ' + fmtTime(REPORT.experiment.ended_at || REPORT.experiment.created_at)
          : 'updated ' + new Date().toLocaleTimeString());
        document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
        // When the first view was drawn, for bench/dashboard_bench.sh.
        if (!performance.getEntriesByName('tune:rendered').length) performance.mark('tune:rendered');
      } catch (e) {
        if (gen !== generation) return;
        showError(String(e.message || e));
      }
      // Poll again (never from a report); a slow answer slows the polling.
      if (!REPORT && gen === generation) timer = setTimeout(tick, Math.max(POLL_MS, 4 * (performance.now() - started)));
    };
    await tick();
  }

  window.addEventListener('hashchange', navigate);
  navigate();
})();
