/* dashboard.js - the charts and winner tables of a group page of `tune dashboard`, drawn from
 * window.TUNE_DATA (data/<slug>.js; its format: harness/analysis/dashboard_impl.h). The charts
 * in view are drawn first, the others when scrolled to or in the background, so that a page of
 * hundreds of shapes opens at once: one SVG path per line and per band, an element per point only for markers.
 * Text from the data goes in through textContent, never as markup. Nothing is fetched. */
(function () {
  'use strict';
  var D = window.TUNE_DATA;
  if (!D) throw new Error('TUNE_DATA is missing: the data file did not load');
  var NS = 'http://www.w3.org/2000/svg';
  var W = 960, H = 280, L = 64, R = 16, T = 24, B = 44; /* the chart and its margins */
  var COLORS = ['#1f6fb4', '#e08a12', '#7d4fb0', '#8c564b', '#d0589f', '#149cab', '#6b6b6b'];
  var VERDICT = {r: 'regression', i: 'improvement', s: 'same', u: 'unstable', n: 'insufficient',
                 m: 'missing'};
  var runs = D.runs, n = runs.length;
  var breaks = runs.map(function (r, i) { return r.changes.length ? i : -1; })
                   .filter(function (i) { return i > 0; });
  var tip = document.getElementById('tip');

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(name, cls, parent, text) {
    var e = document.createElement(name);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function xAt(i) { return L + (n > 1 ? i * (W - L - R) / (n - 1) : (W - L - R) / 2); }
  function fmt(us) { return us === null ? '\u2013' : us.toPrecision(4) + ' \u00b5s'; }
  function pct(p) { return p === null ? '' : (p > 0 ? '+' : '') + p.toFixed(1) + ' %'; }

  /* A step of 1, 2 or 5 times a power of ten near span / 4. */
  function niceStep(span) {
    var p = Math.pow(10, Math.floor(Math.log10(span / 4))), f = span / 4 / p;
    return p * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
  }

  function yScale(series) {
    var lo = Infinity, hi = -Infinity;
    series.forEach(function (s) {
      [s.t, s.lo, s.hi].forEach(function (a) {
        for (var i = 0; i < a.length; i++)
          if (a[i] !== null) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i]; }
      });
    });
    if (lo === Infinity) { lo = 0; hi = 1; } /* no point at all */
    if (!(hi > lo)) { lo *= 0.95; hi *= 1.05; }
    var step = niceStep(hi - lo);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    return {lo: lo, hi: hi, step: step,
            y: function (v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); }};
  }

  function axes(svg, ys) {
    var g = el('g', {'class': 'axis'}, svg);
    for (var v = ys.lo; v <= ys.hi + ys.step / 2; v += ys.step) {
      var y = ys.y(v).toFixed(1);
      el('line', {x1: L, x2: W - R, y1: y, y2: y, 'class': 'grid'}, g);
      el('text', {x: L - 6, y: y, dy: '0.32em', 'text-anchor': 'end'}, g,
         +v.toPrecision(6) + '');
    }
    el('text', {x: 12, y: T - 8}, g, '\u00b5s');
    var every = Math.max(1, Math.ceil(n / 8));
    for (var i = 0; i < n; i += every)
      el('text', {x: xAt(i).toFixed(1), y: H - B + 18,
                  'text-anchor': n > 1 && i === 0 ? 'start' : xAt(i) > W - R - 40 ? 'end' : 'middle'},
         g, runs[i].night);
  }

  /* A vertical line at each run that starts a segment, with what changed as its label. */
  function segments(svg) {
    breaks.forEach(function (i) {
      var g = el('g', {'class': 'segment'}, svg), x = xAt(i).toFixed(1);
      el('title', {}, g, runs[i].night + ': ' + runs[i].changes.join('; '));
      el('line', {x1: x, x2: x, y1: T - 4, y2: H - B}, g);
      el('text', {x: +x + 3, y: T - 8}, g, runs[i].changes.map(function (c) {
        return c.split(' ')[0];
      }).join(', '));
    });
  }

  /* The band lo..hi of series s as one path of closed pieces (a null breaks it). */
  function bandPath(s, ys) {
    var d = '', piece = [];
    function close() {
      if (piece.length) {
        var up = piece.map(function (k) { return xAt(s.x[k]).toFixed(1) + ' ' + ys.y(s.hi[k]).toFixed(1); });
        var down = piece.map(function (k) { return xAt(s.x[k]).toFixed(1) + ' ' + ys.y(s.lo[k]).toFixed(1); });
        d += 'M' + up.join('L') + 'L' + down.reverse().join('L') + 'Z';
      }
      piece = [];
    }
    for (var k = 0; k < s.x.length; k++) {
      if (s.lo[k] === null || s.hi[k] === null) close();
      else piece.push(k);
    }
    close();
    return d;
  }

  function drawChart(box, shape) {
    var series = shape.series, ys = yScale(series);
    var legend = html('div', 'legend', box);
    var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, 'class': 'trend', role: 'img'}, box);
    el('title', {}, svg, shape.shape);
    axes(svg, ys);
    segments(svg);
    var marks = {};
    series.forEach(function (s, j) {
      var color = COLORS[j % COLORS.length];
      var item = html('span', 'key', legend);
      html('i', '', item).style.background = color;
      item.appendChild(document.createTextNode(s.method));
      var band = bandPath(s, ys);
      if (band) el('path', {d: band, fill: color, 'class': 'band'}, svg);
      var d = s.x.map(function (x, k) {
        return (k ? 'L' : 'M') + xAt(x).toFixed(1) + ' ' + ys.y(s.t[k]).toFixed(1);
      }).join('');
      el('path', {d: d, stroke: color, 'class': 'line'}, svg);
      if (s.x.length === 1) el('circle', {cx: xAt(s.x[0]), cy: ys.y(s.t[0]), r: 2.5, fill: color}, svg);
      for (var k = 0; k < s.x.length; k++) {
        var v = s.v.charAt(k);
        if (v !== 'r' && v !== 'i') continue;
        marks[v] = 1;
        var c = el('circle', {cx: xAt(s.x[k]).toFixed(1), cy: ys.y(s.t[k]).toFixed(1), r: 4.5,
                              'class': 'marker ' + VERDICT[v]}, svg);
        el('title', {}, c, runs[s.x[k]].night + ' ' + s.method + ': ' + fmt(s.t[k]) + ' ' +
           pct(s.pct[k]) + ' (' + VERDICT[v] + ')');
      }
    });
    ['r', 'i'].forEach(function (v) {
      if (marks[v]) html('span', 'key ' + VERDICT[v], legend, VERDICT[v]);
    });
    if (breaks.length) html('span', 'key segment', legend, 'new segment');
    hover(svg, series);
  }

  /* A guide line and a tip with every method's time at the run under the pointer. */
  function hover(svg, series) {
    var guide = el('line', {y1: T, y2: H - B, 'class': 'guide', visibility: 'hidden'}, svg);
    var at = series.map(function (s) {
      var a = new Int32Array(n).fill(-1);
      s.x.forEach(function (x, k) { a[x] = k; });
      return a;
    });
    svg.addEventListener('mousemove', function (e) {
      var box = svg.getBoundingClientRect();
      var x = (e.clientX - box.left) * W / box.width;
      var i = n > 1 ? Math.round((x - L) * (n - 1) / (W - L - R)) : 0;
      if (i < 0 || i >= n) { guide.setAttribute('visibility', 'hidden'); tip.hidden = true; return; }
      guide.setAttribute('x1', xAt(i));
      guide.setAttribute('x2', xAt(i));
      guide.setAttribute('visibility', 'visible');
      var lines = [runs[i].night + ' (run ' + runs[i].id + ')'];
      series.forEach(function (s, j) {
        var k = at[j][i];
        if (k < 0) return;
        var w = s.w ? D.winners[s.w[k]] : '';
        lines.push(s.method + ': ' + fmt(s.t[k]) + ' ' + pct(s.pct[k]) + ' ' +
                   VERDICT[s.v.charAt(k)] + (w ? ' [' + w + ']' : ''));
      });
      if (runs[i].changes.length) lines.push(runs[i].changes.join('; '));
      tip.textContent = lines.join('\n');
      tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 380) + 'px';
      tip.style.top = e.clientY + 14 + 'px';
      tip.hidden = false;
    });
    svg.addEventListener('mouseleave', function () {
      guide.setAttribute('visibility', 'hidden');
      tip.hidden = true;
    });
  }

  /* Per method with parameters, the stretches of nights one configuration won; a row where the
   * winner changed says what it replaced. Built when opened if long. */
  function drawWinners(box, shape) {
    var rows = [];
    shape.series.forEach(function (s) {
      if (!s.w) return;
      for (var k = 0; k < s.x.length; k++) {
        var last = rows.length && rows[rows.length - 1];
        if (last && last.s === s && last.w === s.w[k]) { last.to = k; continue; }
        rows.push({s: s, w: s.w[k], from: k, to: k, was: last && last.s === s ? last.w : -1});
      }
    });
    if (!rows.length) return;
    var changes = rows.filter(function (r) { return r.was >= 0; }).length;
    var det = html('details', '', box);
    html('summary', '', det, 'Which configuration won each night (' + changes + ' change' +
         (changes === 1 ? '' : 's') + ')');
    function fill() {
      var table = html('table', 'winners', det), head = html('tr', '', html('thead', '', table));
      ['Method', 'Nights', 'Runs', 'Winner', 'Replaced'].forEach(function (t) { html('th', '', head, t); });
      var body = html('tbody', '', table);
      rows.forEach(function (r) {
        var tr = html('tr', r.was >= 0 ? 'changed' : '', body), a = runs[r.s.x[r.from]].night,
            b = runs[r.s.x[r.to]].night;
        html('td', '', tr, r.s.method);
        html('td', '', tr, a === b ? a : a + ' \u2013 ' + b);
        html('td', 'n', tr, String(r.to - r.from + 1));
        html('td', 'config', tr, D.winners[r.w]);
        html('td', 'config', tr, r.was >= 0 ? D.winners[r.was] : '');
      });
    }
    if (rows.length <= 12) { det.open = true; fill(); }
    else det.addEventListener('toggle', function once() { det.removeEventListener('toggle', once); fill(); });
  }

  /* The charts in view are drawn at once; the others when they come into view or, a slice of
   * about 10 ms at a time, in the background (timers, so that it needs no frame to be drawn). */
  var boxes = [].slice.call(document.querySelectorAll('.chart[data-shape]')), drawn = 0, next = 0;
  function draw(box) {
    if (box.getAttribute('data-drawn')) return;
    box.setAttribute('data-drawn', '1');
    var i = +box.getAttribute('data-shape'), shape = D.shapes[i];
    drawChart(box, shape);
    drawWinners(document.querySelector('.winners[data-shape="' + i + '"]'), shape);
    if (++drawn === boxes.length)
      document.body.setAttribute('data-all-drawn-ms', performance.now().toFixed(0));
  }
  function background() {
    var t0 = performance.now();
    while (next < boxes.length && performance.now() - t0 < 10) draw(boxes[next++]);
    if (next < boxes.length) setTimeout(background, 0);
  }
  var bottom = window.innerHeight + 200;
  boxes.filter(function (b) { return b.getBoundingClientRect().top < bottom; }).forEach(draw);
  document.body.setAttribute('data-first-drawn-ms', performance.now().toFixed(0));
  if (drawn === boxes.length) document.body.setAttribute('data-all-drawn-ms', performance.now().toFixed(0));
  if ('IntersectionObserver' in window) {
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { io.unobserve(e.target); draw(e.target); }
      });
    }, {rootMargin: '300px 0px'});
    boxes.forEach(function (b) { if (!b.getAttribute('data-drawn')) io.observe(b); });
  }
  setTimeout(background, 0);
})();
