// ppsim's report and playground script: draws a ppsim.report/1 document (timelines with zoom,
// pan and a minimap brush, memory over time, peaks, sortable metrics, bars) or a
// ppsim.sweep-report/2 document (line charts with series toggles). One script for the
// self-contained report files and for `ppsim serve`'s page; no external resources.
//
//   ppsim.render(document.getElementById('ppsim-root'), data);
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var KIND_WORDS = { F: 'forward', B: 'backward for the input', W: 'backward for the weights',
                     BW: 'fused backward (B + W)', FB: 'forward overlapped with a backward' };
  // Bars of the comparison: colours that no task kind uses.
  // The bubble bars wear the timelines' idle hatch (no task has it); cost and memory two greys.
  var BAR_COLOURS = { bubble: 'repeating-linear-gradient(45deg,#8a8a8a 0 3px,#cfcfcf 3px 6px)', cost: '#4a5563', memory: '#6b6f80' };
  var HOST_COLOUR = '#2b7a5b';  // memory held on the host (offload), dashed
  var LIMIT_COLOUR = '#c0392b';
  var LABEL_W = 78;   // the device names
  var PEAK_W = 104;   // the peak-memory bars at the right of the rows
  var MINIMAP_H = 30;
  var AXIS_H = 20;
  var MEM_H = 78;

  // ------------------------------------------------------------------------------------------
  // Small helpers.

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sel(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function trim(s) {
    if (s.indexOf('.') < 0 || s.indexOf('e') >= 0) return s;
    return s.replace(/0+$/, '').replace(/\.$/, '');
  }
  // Milliseconds for people: about six significant digits, trailing zeros dropped.
  function ms(x) {
    if (x === null || x === undefined || !isFinite(x)) return '-';
    var a = Math.abs(x);
    if (a === 0) return '0';
    if (a >= 1000) return trim(x.toFixed(2));
    if (a >= 1) return trim(x.toFixed(4));
    return trim(x.toPrecision(4));
  }
  function pct(x) { return (x === null || x === undefined) ? '-' : (100 * x).toFixed(2) + '%'; }
  function mem(x) { return (x === null || x === undefined) ? '-' : trim((+x).toPrecision(4)); }
  function clamp(x, lo, hi) { return x < lo ? lo : x > hi ? hi : x; }
  // A tick step of 1, 2 or 5 times a power of ten that gives ticks at least `px` pixels apart.
  function tickStep(span, width, px) {
    if (!(span > 0) || !(width > 0)) return 1;
    var raw = span * px / width;
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var fs = [1, 2, 5, 10];
    for (var i = 0; i < fs.length; i++) if (fs[i] * p >= raw) return fs[i] * p;
    return 10 * p;
  }

  var tip = null;
  function showTip(text, x, y) {
    if (!tip) {
      tip = document.getElementById('ppsim-tip') || el('div', { id: 'ppsim-tip', role: 'tooltip' }, document.body);
    }
    tip.textContent = '';
    var lines = text.split('\n');
    for (var i = 0; i < lines.length; i++) {
      if (i === 0) el('b', null, tip, lines[0]);
      else tip.appendChild(document.createTextNode('\n' + lines[i]));
    }
    tip.style.display = 'block';
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = x + 14, top = y + 14;
    if (left + w > window.innerWidth - 4) left = Math.max(4, x - w - 14);
    if (top + h > window.innerHeight - 4) top = Math.max(4, y - h - 14);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }
  function hideTip() { if (tip) tip.style.display = 'none'; }

  // Waiting on a message: amber stripes, apart from the grey of idle on compute.
  function commHatch(ctx) {
    var c = document.createElement('canvas');
    c.width = 4; c.height = 4;
    var g = c.getContext('2d');
    g.fillStyle = '#f4f4f4'; g.fillRect(0, 0, 4, 4);
    g.strokeStyle = '#d08c2a'; g.lineWidth = 1.4;
    g.beginPath(); g.moveTo(-1, 5); g.lineTo(5, -1); g.stroke();
    return ctx.createPattern(c, 'repeat');
  }

  function hatch(ctx) {
    var c = document.createElement('canvas');
    c.width = 6; c.height = 6;
    var g = c.getContext('2d');
    g.fillStyle = '#f4f4f4'; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = '#c6c6c6'; g.lineWidth = 1.6;
    g.beginPath();
    g.moveTo(-1, 7); g.lineTo(7, -1); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(5, 7); g.lineTo(7, 5);
    g.stroke();
    return ctx.createPattern(c, 'repeat');
  }

  // A canvas sized in CSS pixels, drawn at the device's pixel ratio.
  function sizeCanvas(c, w, h) {
    var r = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * r) || c.height !== Math.round(h * r)) {
      c.width = Math.round(w * r); c.height = Math.round(h * r);
    }
    c.style.width = w + 'px'; c.style.height = h + 'px';
    var ctx = c.getContext('2d');
    ctx.setTransform(r, 0, 0, r, 0, 0);
    return ctx;
  }

  // ------------------------------------------------------------------------------------------
  // A run of the document, decoded: per device starts and ends in time units, the messages
  // by consumer, memory steps.

  function decodeRun(r, doc) {
    var run = { src: r, name: r.name, unit: r.unit_ns / 1e6, devices: r.devices, dev: [], base: [],
                total: 0, fb: {}, mem: [], peak: [], maxMem: 0, chunks: r.chunks,
                slices: r.slices || 1 };
    var g = 0;
    for (var d = 0; d < r.dev.length; d++) {
      var D = r.dev[d], n = D.d.length;
      var st = new Float64Array(n), en = new Float64Array(n), t = 0;
      for (var i = 0; i < n; i++) { t += D.g[i]; st[i] = t; t += D.d[i]; en[i] = t; }
      // Idle spent waiting on a message in flight: [cwS[k], cwE[k]) in time units.
      var cw = D.cw || [], cwS = [], cwE = [];
      for (i = 0, t = 0; i + 1 < cw.length; i += 2) { t += cw[i]; cwS.push(t); t += cw[i + 1]; cwE.push(t); }
      run.commWaits = run.commWaits || cwS.length > 0;
      run.dev.push({ start: st, end: en, kind: D.k, stage: D.s, mb: D.b, n: n, cwS: cwS, cwE: cwE });
      run.base.push(g);
      g += n;
    }
    run.total = g;
    for (var f = 0; f < r.fb.length; f++) run.fb[r.fb[f][0]] = r.fb[f];
    for (d = 0; d < r.mem.length; d++) {
      var M = r.mem[d], tt = new Float64Array(M.g.length), acc = 0, peak = 0;
      for (i = 0; i < M.g.length; i++) { acc += M.g[i]; tt[i] = acc; peak = Math.max(peak, M.v[i]); }
      run.mem.push({ t: tt, v: M.v });
      run.peak.push(peak);
      run.maxMem = Math.max(run.maxMem, peak);
    }
    // With an offload: what each device holds on the host, drawn dashed on the same scale.
    run.host = [];
    if (r.host) for (d = 0; d < r.host.length; d++) {
      var H = r.host[d], ht = new Float64Array(H.g.length), hacc = 0;
      for (i = 0; i < H.g.length; i++) { hacc += H.g[i]; ht[i] = hacc; run.maxMem = Math.max(run.maxMem, H.v[i]); }
      run.host.push({ t: ht, v: H.v });
    }
    var m = null;
    for (i = 0; i < doc.metrics.length; i++) if (doc.metrics[i].__run === doc.runs.indexOf(r)) m = doc.metrics[i];
    run.metrics = m;
    if (m && m.per_device) for (d = 0; d < m.per_device.length && d < run.peak.length; d++) run.peak[d] = m.per_device[d].peak_memory;
    run.maxMem = Math.max.apply(null, [run.maxMem].concat(run.peak));
    run.makespanMs = r.makespan * run.unit;
    return run;
  }

  // Device and index of a task number (over all devices, in order).
  function locate(run, g) {
    var lo = 0, hi = run.base.length - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (run.base[mid] <= g) lo = mid; else hi = mid - 1; }
    return [lo, g - run.base[lo]];
  }

  // Incoming messages per consumer task, built on first use.
  function incoming(run) {
    if (run.inc) return run.inc;
    var c = run.src.comm, n = run.total, count = new Int32Array(n + 1);
    for (var i = 0; i < c.t.length; i++) count[c.t[i] + 1]++;
    for (i = 0; i < n; i++) count[i + 1] += count[i];
    var at = count.slice(0, n), list = new Int32Array(c.t.length);
    for (i = 0; i < c.t.length; i++) list[at[c.t[i]]++] = i;
    run.inc = { begin: count, list: list };
    return run.inc;
  }

  // A task's micro-batch as the views write it: `3`, or `3.s1` (slice 1) in a sliced run, whose
  // units are mb * slices + slice.
  function unitText(run, u) {
    return run.slices > 1 ? Math.floor(u / run.slices) + '.s' + (u % run.slices) : String(u);
  }

  function taskName(run, d, i) {
    var D = run.dev[d], k = run.src_kinds[D.kind[i]];
    var g = run.base[d] + i;
    if (k === 'FB') {
      var fb = run.fb[g];
      return '(' + D.stage[i] + 'F' + D.mb[i] + ';' + fb[2] + run.src_kinds[fb[1]] + fb[3] + ')';
    }
    return D.stage[i] + k + D.mb[i];
  }

  function chunkOf(run, stage) { var c = run.src.stage_chunk[stage]; return c === undefined ? 0 : c; }

  // What task (d, i) waited for before it could start.
  function waitedFor(run, d, i) {
    var D = run.dev[d], start = D.start[i];
    var free = i > 0 ? D.end[i - 1] : 0;
    var inc = incoming(run), c = run.src.comm, last = -1, lastAt = -Infinity;
    for (var j = inc.begin[run.base[d] + i]; j < inc.begin[run.base[d] + i + 1]; j++) {
      var e = inc.list[j];
      var from = locate(run, c.f[e]);
      var arrive = run.dev[from[0]].end[from[1]] + c.s[e] + c.a[e];
      if (arrive > lastAt) { lastAt = arrive; last = e; }
    }
    var u = run.unit;
    if (last >= 0 && lastAt >= start && lastAt > free) {
      var f = locate(run, c.f[last]);
      return 'waited for ' + taskName(run, f[0], f[1]) + ' on device ' + f[0] + ' (its message arrived at ' + ms(lastAt * u) + ' ms' +
        (c.a[last] > 0 ? ', ' + ms(c.a[last] * u) + ' ms in flight' : '') + ')';
    }
    if (start > free && !(last >= 0 && lastAt >= start))
      return 'waited until ' + ms(start * u) + ' ms (an iteration boundary or the optimizer step)';
    if (i === 0) return 'waited for nothing: the first task of device ' + d;
    var why = 'waited for device ' + d + ' (' + taskName(run, d, i - 1) + ' ended at ' + ms(free * u) + ' ms)';
    if (last >= 0) {
      var g2 = locate(run, c.f[last]);
      why += '; its input from ' + taskName(run, g2[0], g2[1]) + ' was there at ' + ms(lastAt * u) + ' ms';
    }
    return why;
  }

  // ------------------------------------------------------------------------------------------
  // The time view, shared by every timeline of a page while "link" is on.

  function View(span) {
    this.span = span > 0 ? span : 1;
    this.a = 0; this.b = this.span;
    this.listeners = [];
  }
  View.prototype.set = function (a, b, from) {
    var minW = this.span * 1e-6;
    if (b - a < minW) { var c = (a + b) / 2; a = c - minW / 2; b = c + minW / 2; }
    var w = b - a, pad = this.span * 0.02;
    if (w > this.span + 2 * pad) { a = -pad; b = this.span + pad; w = b - a; }
    if (a < -pad) { a = -pad; b = a + w; }
    if (b > this.span + pad) { b = this.span + pad; a = b - w; }
    this.a = a; this.b = b;
    for (var i = 0; i < this.listeners.length; i++) if (this.listeners[i] !== from) this.listeners[i].viewChanged();
    if (from) from.viewChanged();
  };
  View.prototype.reset = function (from) { this.set(0, this.span, from); };

  // ------------------------------------------------------------------------------------------
  // One run's timeline: minimap with a brush, rows of tasks with hatched idle and per-device
  // peak bars, the time axis, and the memory curve below.

  function Timeline(page, run, box) {
    this.page = page; this.run = run; this.box = box;
    this.view = page.view;
    this.d0 = 0; this.d1 = run.devices - 1;
    this.selected = null;   // micro-batch whose chain is highlighted
    this.memDevice = run.devices <= 8 ? -1 : this.peakDevice();
    this.visible = false;
    this.dirty = true;
    this.drawn = 0;
    var self = this;
    box.setAttribute('data-schedule', run.name);
    box.setAttribute('data-tasks', run.total);
    this.mini = el('canvas', { class: 'minimap', 'aria-label': 'overview of ' + run.name }, box);
    this.main = el('canvas', { class: 'timeline', role: 'img', 'aria-label': 'timeline of ' + run.name }, box);
    var mh = el('div', { class: 'memhead' }, box);
    el('span', null, mh, 'activation memory (M_B' + (run.host.length ? '; dashed: held on the host' : '') + ') of');
    this.memSelect = el('select', { class: 'mem-device', 'aria-label': 'memory of which device' }, mh);
    el('option', { value: '-1' }, this.memSelect, 'every device');
    for (var d = 0; d < run.devices; d++) el('option', { value: String(d) }, this.memSelect, 'device ' + d + ' (peak ' + mem(run.peak[d]) + ')');
    this.memSelect.value = String(this.memDevice);
    this.memSelect.addEventListener('change', function () { self.memDevice = +self.memSelect.value; self.request(); });
    if (run.src.mem_limit !== null) el('span', { class: 'note' }, mh, 'limit ' + mem(run.src.mem_limit) + ' M_B (dashed)');
    this.rangeNote = el('span', { class: 'devrange' }, mh);
    this.memCanvas = el('canvas', { class: 'memory', 'aria-label': 'activation memory of ' + run.name }, box);
    this.view.listeners.push(this);
    this.bind();
  }

  Timeline.prototype.peakDevice = function () {
    var best = 0;
    for (var d = 0; d < this.run.peak.length; d++) if (this.run.peak[d] > this.run.peak[best]) best = d;
    return best;
  };
  Timeline.prototype.viewChanged = function () { this.request(); };
  Timeline.prototype.request = function () {
    this.dirty = true;
    if (!this.visible) return;
    var self = this;
    if (this.frame) return;
    this.frame = requestAnimationFrame(function () { self.frame = 0; self.draw(); });
  };

  Timeline.prototype.layout = function () {
    var width = Math.max(480, this.box.clientWidth || 900);
    var rows = this.d1 - this.d0 + 1;
    var rowH = clamp(Math.floor(460 / rows), 11, 24);
    var gap = rowH >= 16 ? 3 : 1;
    this.L = LABEL_W;
    this.W = width - LABEL_W - PEAK_W;
    this.rowH = rowH; this.gap = gap;
    this.rowsH = rows * (rowH + gap);
    this.width = width;
  };
  Timeline.prototype.x = function (tMs) { return this.L + (tMs - this.view.a) / (this.view.b - this.view.a) * this.W; };
  Timeline.prototype.t = function (x) { return this.view.a + (x - this.L) / this.W * (this.view.b - this.view.a); };

  Timeline.prototype.colour = function (d, i) {
    var D = this.run.dev[d];
    var pal = this.page.doc.palette[this.run.src_kinds[D.kind[i]]];
    if (this.run.chunks <= 1) return pal[0];
    return pal[Math.min(chunkOf(this.run, D.stage[i]), pal.length - 1)];
  };
  Timeline.prototype.inChain = function (d, i) {
    if (this.selected === null) return true;
    var D = this.run.dev[d];
    if (D.mb[i] === this.selected) return true;
    var fb = this.run.fb[this.run.base[d] + i];
    return fb !== undefined && fb[3] === this.selected;
  };

  Timeline.prototype.draw = function () {
    this.dirty = false;
    this.layout();
    this.drawMinimap();
    this.drawRows();
    this.drawMemory();
    this.box.setAttribute('data-drawn', this.drawn);
    this.box.setAttribute('data-view-start', this.view.a);
    this.box.setAttribute('data-view-end', this.view.b);
    this.box.setAttribute('data-devices-shown', this.d0 + '-' + this.d1);
    this.box.setAttribute('data-selected-mb', this.selected === null ? '' : this.selected);
    this.page.drawCount++;
    this.page.root.setAttribute('data-draws', this.page.drawCount);
  };

  Timeline.prototype.drawMinimap = function () {
    var run = this.run, w = this.width, ctx = sizeCanvas(this.mini, w, MINIMAP_H);
    ctx.clearRect(0, 0, w, MINIMAP_H);
    ctx.fillStyle = '#555'; ctx.font = '11px sans-serif'; ctx.textBaseline = 'middle';
    ctx.fillText('overview', 4, MINIMAP_H / 2);
    var span = this.view.span, W = this.W, L = this.L, u = run.unit;
    var h = (MINIMAP_H - 4) / run.devices;
    ctx.fillStyle = '#f0f0f0'; ctx.fillRect(L, 2, W, MINIMAP_H - 4);
    for (var d = 0; d < run.devices; d++) {
      var D = run.dev[d], y = 2 + d * h, lastX = -1, lastC = '';
      for (var i = 0; i < D.n; i++) {
        var x0 = L + D.start[i] * u / span * W, x1 = L + D.end[i] * u / span * W;
        var c = this.colour(d, i);
        if (c === lastC && x0 <= lastX + 0.5 && x1 - lastX < 1) { lastX = Math.max(lastX, x1); continue; }
        ctx.fillStyle = c; ctx.fillRect(x0, y, Math.max(x1 - x0, 0.4), Math.max(h, 0.6));
        lastX = x1; lastC = c;
      }
    }
    // The brush: the time range the rows show.
    var bx0 = L + this.view.a / span * W, bx1 = L + this.view.b / span * W;
    ctx.fillStyle = 'rgba(255,255,255,0.55)';
    ctx.fillRect(L, 1, Math.max(0, bx0 - L), MINIMAP_H - 2);
    ctx.fillRect(bx1, 1, Math.max(0, L + W - bx1), MINIMAP_H - 2);
    ctx.strokeStyle = '#222'; ctx.lineWidth = 1.2;
    ctx.strokeRect(clamp(bx0, L, L + W), 1, clamp(bx1, L, L + W) - clamp(bx0, L, L + W), MINIMAP_H - 2);
  };

  Timeline.prototype.drawRows = function () {
    var run = this.run, ctx = sizeCanvas(this.main, this.width, this.rowsH + AXIS_H);
    var L = this.L, W = this.W, rowH = this.rowH, gap = this.gap, u = run.unit;
    var a = this.view.a, b = this.view.b, scale = W / (b - a);
    ctx.clearRect(0, 0, this.width, this.rowsH + AXIS_H);
    if (!this.page.hatch) this.page.hatch = hatch(ctx);
    if (!this.page.commHatch) this.page.commHatch = commHatch(ctx);
    ctx.font = '11px sans-serif'; ctx.textBaseline = 'middle';
    var drawn = 0, labels = [];
    var limit = run.src.mem_limit;
    var peakMax = Math.max(run.maxMem, limit === null ? 0 : limit) || 1;
    for (var d = this.d0; d <= this.d1; d++) {
      var D = run.dev[d], y = (d - this.d0) * (rowH + gap);
      ctx.fillStyle = '#333'; ctx.textAlign = 'left';
      ctx.fillText('device ' + d, 4, y + rowH / 2);
      ctx.save();
      ctx.beginPath(); ctx.rect(L, y, W, rowH); ctx.clip();
      if (D.n > 0) {
        // Idle is everything inside the device's span that no task covers: hatch it all first.
        var s0 = this.x(D.start[0] * u), s1 = this.x(D.end[D.n - 1] * u);
        ctx.fillStyle = this.page.hatch; ctx.fillRect(s0, y, s1 - s0, rowH);
        ctx.fillStyle = this.page.commHatch;
        for (var q = 0; q < D.cwS.length; q++) {
          if (D.cwE[q] * u < a || D.cwS[q] * u > b) continue;
          var q0 = this.x(D.cwS[q] * u);
          ctx.fillRect(q0, y, Math.max(this.x(D.cwE[q] * u) - q0, 0.5), rowH);
        }
      }
      // The first task that ends after the view starts.
      var lo = 0, hi = D.n;
      var aU = a / u;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (D.end[mid] < aU) lo = mid + 1; else hi = mid; }
      var runX = -1, runEnd = -1, runC = '';
      var flush = function () { if (runX >= 0) { ctx.fillStyle = runC; ctx.fillRect(runX, y, Math.max(runEnd - runX, 0.5), rowH); } runX = -1; };
      for (var i = lo; i < D.n; i++) {
        var ts = D.start[i] * u;
        if (ts > b) break;
        var x0 = L + (ts - a) * scale, x1 = L + (D.end[i] * u - a) * scale, w = x1 - x0;
        var c = this.colour(d, i), on = this.inChain(d, i);
        drawn++;
        if (!on) c = fade(c);
        if (w < 1.5) {
          // Sub-pixel tasks: one rectangle per stretch of one colour.
          if (runX >= 0 && c === runC && x0 <= runEnd + 0.5) { runEnd = Math.max(runEnd, x1); continue; }
          flush();
          runX = x0; runEnd = x1; runC = c;
          continue;
        }
        flush();
        ctx.fillStyle = c;
        ctx.fillRect(x0, y, w > 4 ? w - 1 : w, rowH);
        if (this.selected !== null && on) { ctx.strokeStyle = '#000'; ctx.lineWidth = 1.5; ctx.strokeRect(x0 + 0.75, y + 0.75, Math.max(w - 2.5, 0.5), rowH - 1.5); }
        if (w > 16 && rowH >= 12) labels.push([x0 + w / 2, y + rowH / 2, w, d, i, on]);
      }
      flush();
      ctx.restore();
      // The device's peak memory as a bar, the limit as a line.
      var px = L + W + 8, pw = PEAK_W - 50;
      ctx.fillStyle = '#f2f2f2'; ctx.fillRect(px, y + 2, pw, rowH - 4);
      ctx.fillStyle = BAR_COLOURS.memory; ctx.fillRect(px, y + 2, pw * run.peak[d] / peakMax, rowH - 4);
      if (limit !== null) { ctx.fillStyle = LIMIT_COLOUR; ctx.fillRect(px + pw * limit / peakMax - 1, y, 2, rowH); }
      ctx.fillStyle = '#333'; ctx.textAlign = 'left'; ctx.fillText(mem(run.peak[d]), px + pw + 4, y + rowH / 2);
    }
    // Labels where they fit: "F3" or "3", inside the plot.
    ctx.save();
    ctx.beginPath(); ctx.rect(L, 0, W, this.rowsH); ctx.clip();
    ctx.textAlign = 'center';
    for (var k = 0; k < labels.length; k++) {
      var lb = labels[k], D2 = run.dev[lb[3]], j = lb[4];
      var kind = run.src_kinds[D2.kind[j]];
      var fb = run.fb[run.base[lb[3]] + j];
      var short = fb ? D2.mb[j] + '+' + fb[3] : unitText(run, D2.mb[j]);
      var long = fb ? 'F' + D2.mb[j] + '+' + run.src_kinds[fb[1]] + fb[3] : kind + unitText(run, D2.mb[j]);
      var text = long.length * 6.6 + 6 <= lb[2] ? long : short.length * 6.6 + 4 <= lb[2] ? short : '';
      if (!text) continue;
      var ch = chunkOf(run, D2.stage[j]) % 4;
      ctx.fillStyle = lb[5] ? (run.chunks > 1 && (ch === 1 || ch === 3) ? '#fff' : '#111') : '#999';
      ctx.fillText(text, lb[0], lb[1] + 0.5);
    }
    ctx.restore();
    if (this.selected !== null) this.drawChain(ctx);
    // The time axis.
    var ay = this.rowsH + 2;
    ctx.strokeStyle = '#666'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(L, ay); ctx.lineTo(L + W, ay); ctx.stroke();
    var step = tickStep(b - a, W, 90);
    ctx.fillStyle = '#333'; ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (var t = Math.ceil(a / step) * step; t <= b + step * 1e-9; t += step) {
      var tx = this.x(t);
      if (tx < L - 0.5 || tx > L + W + 0.5) continue;
      ctx.beginPath(); ctx.moveTo(tx, ay); ctx.lineTo(tx, ay + 4); ctx.stroke();
      ctx.fillText(ms(Math.round(t / step) * step), tx, ay + 5);
    }
    ctx.textAlign = 'left'; ctx.fillText('time (ms)', 4, ay + 5);
    ctx.textAlign = 'right'; ctx.fillText('peak M_B', this.width - 2, ay + 5);
    this.drawn = drawn;
    this.rangeNote.textContent = (this.d0 > 0 || this.d1 < run.devices - 1)
      ? 'showing devices ' + this.d0 + '-' + this.d1 + ' of ' + run.devices + ' (double-click the device names for all)' : '';
  };

  var fadeCache = {};
  function fade(c) {
    if (fadeCache[c]) return fadeCache[c];
    var r = parseInt(c.substr(1, 2), 16), g = parseInt(c.substr(3, 2), 16), b = parseInt(c.substr(5, 2), 16);
    var m = function (v) { return Math.round(v + (235 - v) * 0.75); };
    var s = 'rgb(' + m(r) + ',' + m(g) + ',' + m(b) + ')';
    fadeCache[c] = s;
    return s;
  }

  // The highlighted micro-batch's messages: a line from each send to its arrival.
  Timeline.prototype.drawChain = function (ctx) {
    var run = this.run, c = run.src.comm, u = run.unit, rowH = this.rowH, gap = this.gap;
    ctx.save();
    ctx.beginPath(); ctx.rect(this.L, 0, this.W, this.rowsH); ctx.clip();
    ctx.strokeStyle = '#111'; ctx.lineWidth = 1.3;
    for (var e = 0; e < c.f.length; e++) {
      var f = locate(run, c.f[e]), t = locate(run, c.t[e]);
      if (!this.inChain(f[0], f[1]) || !this.inChain(t[0], t[1])) continue;
      if (f[0] < this.d0 || f[0] > this.d1 || t[0] < this.d0 || t[0] > this.d1) continue;
      var send = run.dev[f[0]].end[f[1]] + c.s[e];
      var x0 = this.x(send * u), x1 = this.x((send + c.a[e]) * u);
      var y0 = (f[0] - this.d0) * (rowH + gap) + rowH / 2, y1 = (t[0] - this.d0) * (rowH + gap) + rowH / 2;
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      ctx.beginPath(); ctx.arc(x1, y1, 2.2, 0, 2 * Math.PI); ctx.fillStyle = '#111'; ctx.fill();
    }
    ctx.restore();
  };

  Timeline.prototype.drawMemory = function () {
    var run = this.run, w = this.width, ctx = sizeCanvas(this.memCanvas, w, MEM_H);
    var L = this.L, W = this.W, u = run.unit, a = this.view.a, b = this.view.b;
    ctx.clearRect(0, 0, w, MEM_H);
    var limit = run.src.mem_limit;
    var top = Math.max(run.maxMem, limit === null ? 0 : limit) * 1.08 || 1;
    var y = function (v) { return MEM_H - 4 - v / top * (MEM_H - 10); };
    ctx.fillStyle = '#fafafa'; ctx.fillRect(L, 2, W, MEM_H - 6);
    ctx.font = '10px sans-serif'; ctx.fillStyle = '#555'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    var step = tickStep(top, MEM_H - 10, 22);
    ctx.strokeStyle = '#e6e6e6'; ctx.lineWidth = 1;
    // The values at the right end of the rows, where the peak bars are: the left holds the names.
    for (var v = 0; v <= top; v += step) {
      ctx.beginPath(); ctx.moveTo(L, y(v)); ctx.lineTo(L + W, y(v)); ctx.stroke();
      ctx.textAlign = 'left';
      // Kept inside the canvas, so the underscore of the lowest label is not cut off ('0 M B').
      ctx.fillText(mem(v) + ' M_B', L + W + 6, clamp(y(v), 7, MEM_H - 8));
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(L, 0, W, MEM_H); ctx.clip();
    var self = this;
    var curve = function (d, colour, width, series) {
      var M = (series || run.mem)[d];
      ctx.strokeStyle = colour; ctx.lineWidth = width;
      ctx.beginPath();
      var last = 0, started = false;
      ctx.moveTo(L - 2, y(0));
      for (var i = 0; i < M.t.length; i++) {
        var x = self.x(M.t[i] * u);
        if (x < L - 2) { last = M.v[i]; continue; }
        if (!started) { ctx.lineTo(L - 2, y(last)); started = true; }
        ctx.lineTo(x, y(last)); ctx.lineTo(x, y(M.v[i]));
        last = M.v[i];
        if (x > L + W + 2) break;
      }
      ctx.lineTo(L + W + 2, y(last));
      ctx.stroke();
    };
    var shown = this.memDevice < 0 ? this.peakDevice() : this.memDevice;
    if (this.memDevice < 0) {
      for (var d = 0; d < run.devices; d++) if (d !== shown) curve(d, 'rgba(74,85,99,0.45)', 1);
    }
    curve(shown, '#22303c', 1.8);
    // The host's: the chosen device's, or over every device the one that holds the most there.
    var hostOf = shown, most = -1;
    if (this.memDevice < 0)
      for (var h = 0; h < run.host.length; h++) {
        var hv = run.host[h].v, hp = 0;
        for (var k = 0; k < hv.length; k++) hp = Math.max(hp, hv[k]);
        if (hp > most) { most = hp; hostOf = h; }
      }
    if (run.host.length > hostOf) {
      ctx.setLineDash([4, 3]);
      curve(hostOf, HOST_COLOUR, 1.5, run.host);
      ctx.setLineDash([]);
    }
    if (limit !== null) {
      ctx.strokeStyle = LIMIT_COLOUR; ctx.setLineDash([5, 4]); ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(L, y(limit)); ctx.lineTo(L + W, y(limit)); ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.restore();
    ctx.textAlign = 'left'; ctx.fillStyle = '#333';
    ctx.fillText(this.memDevice < 0 ? 'all devices' : 'device ' + this.memDevice, 4, MEM_H / 2 - 7);
    ctx.fillText('(bold: ' + (this.memDevice < 0 ? 'peak device ' + this.peakDevice() : 'selected') + ')', 4, MEM_H / 2 + 7);
  };

  // Which task is under (x, y) of the rows canvas, or null.
  Timeline.prototype.hit = function (x, y) {
    var row = Math.floor(y / (this.rowH + this.gap));
    var d = this.d0 + row;
    if (row < 0 || d > this.d1 || y - row * (this.rowH + this.gap) > this.rowH) return null;
    if (x < this.L || x > this.L + this.W) return null;
    var D = this.run.dev[d], t = this.t(x) / this.run.unit, tol = 2 / this.W * (this.view.b - this.view.a) / this.run.unit;
    var lo = 0, hi = D.n;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (D.end[mid] < t) lo = mid + 1; else hi = mid; }
    for (var i = Math.max(0, lo - 1); i < Math.min(D.n, lo + 2); i++)
      if (D.start[i] - tol <= t && t <= D.end[i] + tol) return [d, i];
    for (var q = 0; q < D.cwS.length; q++)
      if (D.cwS[q] <= t && t < D.cwE[q]) return { idle: d, t: t, comm: true };
    return { idle: d, t: t };
  };

  Timeline.prototype.describe = function (d, i) {
    var run = this.run, D = run.dev[d], u = run.unit, k = run.src_kinds[D.kind[i]];
    var fb = run.fb[run.base[d] + i];
    var lines = [taskName(run, d, i) + ' on device ' + d + '  (' + run.name + ')'];
    var part = function (kind, stage, mb) {
      return KIND_WORDS[kind] + ': stage ' + stage + (run.chunks > 1 ? ', chunk ' + chunkOf(run, stage) : '') +
             (run.slices > 1 ? ', micro-batch ' + Math.floor(mb / run.slices) + ', slice ' + (mb % run.slices)
                             : ', micro-batch ' + mb);
    };
    if (fb) { lines.push(part('F', D.stage[i], D.mb[i])); lines.push('overlapped with ' + part(run.src_kinds[fb[1]], fb[2], fb[3])); }
    else lines.push(part(k, D.stage[i], D.mb[i]));
    lines.push('start ' + ms(D.start[i] * u) + ' ms, end ' + ms(D.end[i] * u) + ' ms, duration ' + ms((D.end[i] - D.start[i]) * u) + ' ms');
    lines.push(waitedFor(run, d, i));
    lines.push('click: follow ' + (run.slices > 1 ? 'slice ' : 'micro-batch ') + unitText(run, D.mb[i]) + ' across the devices');
    return lines.join('\n');
  };

  Timeline.prototype.bind = function () {
    var self = this, main = this.main, drag = null;
    var pos = function (e) { var r = main.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    main.addEventListener('wheel', function (e) {
      var p = pos(e);
      if (p[0] < self.L || p[0] > self.L + self.W) return;
      e.preventDefault();
      var v = self.view, w = v.b - v.a;
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        var dt = (e.shiftKey ? e.deltaY : e.deltaX) / self.W * w;
        v.set(v.a + dt, v.b + dt, self);
        return;
      }
      var f = Math.exp(clamp(e.deltaY, -300, 300) * 0.0018), at = self.t(p[0]);
      v.set(at - (at - v.a) * f, at + (v.b - at) * f, self);
    }, { passive: false });
    main.addEventListener('mousedown', function (e) {
      var p = pos(e);
      drag = { x: p[0], y: p[1], a: self.view.a, b: self.view.b, moved: false, labels: p[0] < self.L };
      e.preventDefault();
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var p = pos(e);
      if (Math.abs(p[0] - drag.x) + Math.abs(p[1] - drag.y) > 3) drag.moved = true;
      if (drag.labels) return;
      if (!drag.moved) return;
      var dt = (p[0] - drag.x) / self.W * (drag.b - drag.a);
      self.view.set(drag.a - dt, drag.b - dt, self);
      hideTip();
    });
    window.addEventListener('mouseup', function (e) {
      if (!drag) return;
      var p = pos(e), was = drag;
      drag = null;
      if (was.labels) {
        // A drag over the device names picks a range of devices.
        var r0 = Math.floor(Math.min(was.y, p[1]) / (self.rowH + self.gap)), r1 = Math.floor(Math.max(was.y, p[1]) / (self.rowH + self.gap));
        if (was.moved) self.showDevices(self.d0 + r0, self.d0 + r1);
        return;
      }
      if (was.moved) return;
      var h = self.hit(p[0], p[1]);
      if (h && h.length) {
        var mb = self.run.dev[h[0]].mb[h[1]];
        self.selected = self.selected === mb ? null : mb;
      } else {
        self.selected = null;
      }
      self.request();
    });
    main.addEventListener('dblclick', function (e) {
      var p = pos(e);
      if (p[0] < self.L) self.showDevices(0, self.run.devices - 1);
      else self.view.reset(self);
    });
    main.addEventListener('mousemove', function (e) {
      if (drag && drag.moved) return;
      var p = pos(e), h = self.hit(p[0], p[1]);
      if (h && h.length) { showTip(self.describe(h[0], h[1]), e.clientX, e.clientY); main.style.cursor = 'pointer'; }
      else if (h && h.idle !== undefined) { showTip('device ' + h.idle + (h.comm ? ': waiting for a message at ' : ': idle at ') + ms(h.t * self.run.unit) + ' ms', e.clientX, e.clientY); main.style.cursor = 'grab'; }
      else if (p[0] < self.L) { hideTip(); main.style.cursor = 'ns-resize'; }
      else { hideTip(); main.style.cursor = 'default'; }
    });
    main.addEventListener('mouseleave', hideTip);

    // The minimap: drag the brush, its edges, or draw a new one.
    var mini = this.mini, brush = null;
    var mpos = function (e) { var r = mini.getBoundingClientRect(); return e.clientX - r.left; };
    var tOf = function (x) { return (x - self.L) / self.W * self.view.span; };
    mini.addEventListener('mousedown', function (e) {
      var x = mpos(e), span = self.view.span;
      var bx0 = self.L + self.view.a / span * self.W, bx1 = self.L + self.view.b / span * self.W;
      // Inside the brush a drag moves it, at its edges resizes it, elsewhere draws a new one (and
      // everywhere while the brush still covers everything).
      var full = bx1 - bx0 >= self.W * 0.98;
      var mode = full ? 'new' : Math.abs(x - bx0) < 5 ? 'left' : Math.abs(x - bx1) < 5 ? 'right' : (x > bx0 && x < bx1) ? 'move' : 'new';
      brush = { mode: mode, x: x, a: self.view.a, b: self.view.b };
      e.preventDefault();
    });
    window.addEventListener('mousemove', function (e) {
      if (!brush) return;
      var x = mpos(e), v = self.view, dt = tOf(x) - tOf(brush.x);
      if (brush.mode === 'move') v.set(brush.a + dt, brush.b + dt, self);
      else if (brush.mode === 'left') v.set(Math.min(brush.a + dt, brush.b - v.span * 1e-4), brush.b, self);
      else if (brush.mode === 'right') v.set(brush.a, Math.max(brush.b + dt, brush.a + v.span * 1e-4), self);
      else if (Math.abs(x - brush.x) > 3) v.set(Math.min(tOf(x), tOf(brush.x)), Math.max(tOf(x), tOf(brush.x)), self);
    });
    window.addEventListener('mouseup', function (e) {
      if (!brush) return;
      var x = mpos(e), b = brush;
      brush = null;
      if (b.mode === 'new' && Math.abs(x - b.x) <= 3) {
        // A click centres the view there.
        var w = self.view.b - self.view.a, c = tOf(x);
        self.view.set(c - w / 2, c + w / 2, self);
      }
    });
    mini.addEventListener('mousemove', function (e) {
      var x = mpos(e), span = self.view.span;
      var bx0 = self.L + self.view.a / span * self.W, bx1 = self.L + self.view.b / span * self.W;
      mini.style.cursor = (Math.abs(x - bx0) < 5 || Math.abs(x - bx1) < 5) ? 'ew-resize' : (x > bx0 && x < bx1) ? 'move' : 'crosshair';
    });

    this.memCanvas.addEventListener('mousemove', function (e) {
      var r = self.memCanvas.getBoundingClientRect(), x = e.clientX - r.left;
      if (x < self.L || x > self.L + self.W) { hideTip(); return; }
      var t = self.t(x) / self.run.unit, d = self.memDevice < 0 ? self.peakDevice() : self.memDevice;
      var M = self.run.mem[d], v = 0;
      for (var i = 0; i < M.t.length && M.t[i] <= t; i++) v = M.v[i];
      showTip('device ' + d + ': ' + mem(v) + ' M_B at ' + ms(t * self.run.unit) + ' ms\npeak ' + mem(self.run.peak[d]) + ' M_B' +
        (self.run.src.mem_limit !== null ? ', limit ' + mem(self.run.src.mem_limit) + ' M_B' : ''), e.clientX, e.clientY);
    });
    this.memCanvas.addEventListener('mouseleave', hideTip);
  };

  Timeline.prototype.showDevices = function (d0, d1) {
    this.d0 = clamp(Math.min(d0, d1), 0, this.run.devices - 1);
    this.d1 = clamp(Math.max(d0, d1), 0, this.run.devices - 1);
    this.request();
  };

  // ------------------------------------------------------------------------------------------
  // The comparison: a sortable metrics table and bars.

  function metricsTable(parent, doc, runs) {
    var cols = [
      ['schedule', 'name', function (m) { return m.schedule; }],
      ['p', 'num', function (m) { return m.devices; }],
      ['m', 'num', function (m) { return m.microbatches; }],
      ['v', 'num', function (m) { return m.chunks; }],
      ['tasks', 'num', function (m) { return m.tasks; }],
      ['makespan ms', 'num', function (m) { return m.makespan_ms; }, ms],
      ['cost ms', 'num', function (m) { return m.cost_ms; }, ms],
      ['ideal ms', 'num', function (m) { return m.ideal_ms; }, ms],
      ['bubble rate', 'num', function (m) { return m.bubble_rate; }, pct],
      ['bubble / ideal', 'num', function (m) { return m.bubble_over_ideal; }, pct],
      ['idle', 'num', function (m) { return m.idle_fraction; }, pct],
      ['peak M_B', 'num', function (m) { return m.peak_memory; }, mem],
      ['lower bound ms', 'num', function (m) { return m.lower_bound_ms; }, ms],
      ['gap to it', 'num', function (m) { return m.optimality_gap; }, pct]
    ];
    // Over noisy samples (--jitter): the cost's mean and tail, and how often a schedule won.
    var sampled = doc.metrics.some(function (m) { return !!m.samples; });
    if (sampled) {
      var dist = function (q) { return function (m) { return m.samples ? m.samples.cost_ms[q] : null; }; };
      cols.push(['mean ms', 'num', dist('mean'), ms], ['p90 ms', 'num', dist('p90'), ms],
                ['p99 ms', 'num', dist('p99'), ms]);
      if (doc.metrics.some(function (m) { return m.samples && m.samples.wins !== undefined; }))
        cols.push(['wins', 'num', function (m) { return m.samples && m.samples.wins !== undefined ? m.samples.wins / m.samples.count : null; }, pct]);
    }
    var table = el('table', { class: 'metrics sortable' }, parent);
    var head = el('tr', null, el('thead', null, table));
    var body = el('tbody', null, table);
    var ok = [], bad = [];
    doc.metrics.forEach(function (m) { ((m.status || 'ok') === 'ok' ? ok : bad).push(m); });
    var order = { col: -1, dir: 1 };
    var fill = function () {
      body.textContent = '';
      var rows = ok.slice();
      if (order.col >= 0) {
        var get = cols[order.col][2];
        rows.sort(function (x, y) {
          var a = get(x), b = get(y);
          if (a === undefined || a === null) return 1;
          if (b === undefined || b === null) return -1;
          return (typeof a === 'string' ? a.localeCompare(b) : a - b) * order.dir;
        });
      }
      rows.forEach(function (m) {
        var tr = el('tr', { 'data-schedule': m.schedule }, body);
        cols.forEach(function (c) {
          var v = c[2](m), text = v === undefined || v === null ? '-' : c[3] ? c[3](v) : String(v);
          el('td', { class: c[1] === 'name' ? 'name' : null, 'data-key': c[0], 'data-value': v === undefined || v === null ? '' : String(v) }, tr, text);
        });
      });
      bad.forEach(function (m) {
        var tr = el('tr', { class: 'infeasible', 'data-schedule': m.schedule }, body);
        el('td', { class: 'name' }, tr, m.schedule);
        el('td', { class: 'name status-bad', colspan: cols.length - 1 }, tr, (m.status === 'rejected' ? 'rejected: ' : 'infeasible: ') + m.reason +
          (m.least_mem_limit !== null && m.least_mem_limit !== undefined ? '; the least limit that works: ' + mem(m.least_mem_limit) + ' M_B' : ''));
      });
    };
    cols.forEach(function (c, i) {
      var th = el('th', { class: c[1] === 'name' ? 'name' : null, title: 'sort by ' + c[0] }, head, c[0]);
      th.addEventListener('click', function () {
        order.dir = order.col === i ? -order.dir : 1;
        order.col = i;
        Array.prototype.forEach.call(head.children, function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(order.dir > 0 ? 'sorted-asc' : 'sorted-desc');
        fill();
      });
    });
    fill();
    return table;
  }

  function bars(parent, title, items, colour, max) {
    var box = el('div', { class: 'bars', 'data-chart': title }, parent);
    el('div', { class: 'title' }, box, title);
    var most = max || 0;
    items.forEach(function (it) { if (it.value !== null && isFinite(it.value)) most = Math.max(most, it.value); });
    if (!(most > 0)) most = 1;
    items.forEach(function (it) {
      var row = el('div', { class: 'row' }, box);
      el('span', { class: 'label', title: it.label }, row, it.label);
      var track = el('span', { class: 'track' }, row);
      if (it.value !== null) {
        var f = el('span', { class: 'fill' }, track);
        f.style.width = (100 * Math.max(0, it.value) / most) + '%';
        f.style.background = colour;
      }
      el('span', { class: 'value' }, row, it.text);
    });
  }

  // ------------------------------------------------------------------------------------------
  // The page of a ppsim.report/1 document.

  function legend(parent, doc, runs) {
    var box = el('div', { class: 'legend' }, parent);
    var seen = {}, chunked = false;
    runs.forEach(function (run) {
      chunked = chunked || run.chunks > 1;
      run.dev.forEach(function (D) {
        for (var i = 0; i < D.n; i++) {
          var key = D.kind[i] + ':' + (run.chunks > 1 ? Math.min(chunkOf(run, D.stage[i]), 3) : 0);
          seen[key] = true;
        }
      });
    });
    doc.kinds.forEach(function (k, ki) {
      for (var c = 0; c < 4; c++) {
        if (!seen[ki + ':' + c]) continue;
        var item = el('span', null, box);
        var sw = el('span', { class: 'sw' }, item);
        sw.style.background = doc.palette[k][Math.min(c, doc.palette[k].length - 1)];
        item.appendChild(document.createTextNode(chunked ? k + ' chunk ' + c : k + ' (' + KIND_WORDS[k] + ')'));
      }
    });
    var idle = el('span', null, box);
    el('span', { class: 'sw idle' }, idle);
    idle.appendChild(document.createTextNode('idle'));
    if (runs.some(function (r) { return r.commWaits; })) {
      var cwItem = el('span', null, box);
      el('span', { class: 'sw comm' }, cwItem);
      cwItem.appendChild(document.createTextNode('idle, waiting for a message'));
    }
    if (runs.some(function (r) { return r.src.mem_limit !== null; })) {
      var lim = el('span', null, box);
      el('span', { class: 'sw limit' }, lim);
      lim.appendChild(document.createTextNode('memory limit'));
    }
  }

  function renderReport(root, doc) {
    var page = { root: root, doc: doc, drawCount: 0, timelines: [], hatch: null, commHatch: null };
    var kinds = doc.kinds;
    // Rows that ran, in order, are the runs.
    var ri = 0;
    doc.metrics.forEach(function (m) { if ((m.status || 'ok') === 'ok') m.__run = ri++; });
    var runs = doc.runs.map(function (r) { var run = decodeRun(r, doc); run.src_kinds = kinds; return run; });
    root.textContent = '';
    root.setAttribute('data-schema', doc.schema);
    root.setAttribute('data-runs', runs.length);
    var span = 0;
    runs.forEach(function (r) { span = Math.max(span, r.makespanMs); });
    page.view = new View(span);
    el('p', { class: 'sub' }, root, runs.length + ' schedule' + (runs.length === 1 ? '' : 's') +
      (doc.metrics.length > runs.length ? ' (' + (doc.metrics.length - runs.length) + ' more did not fit)' : '') +
      '; every timeline on one time scale (' + ms(span) + ' ms across)');

    el('h2', null, root, 'Metrics');
    metricsTable(root, doc, runs);
    var charts = el('div', { class: 'charts' }, root);
    // In the table's order: the runs, then those that did not run.
    var rowOrder = doc.metrics.filter(function (m) { return (m.status || 'ok') === 'ok'; })
      .concat(doc.metrics.filter(function (m) { return (m.status || 'ok') !== 'ok'; }));
    var items = function (f, text) {
      return rowOrder.map(function (m) {
        var ok = (m.status || 'ok') === 'ok';
        return { label: m.schedule, value: ok ? f(m) : null, text: ok ? text(m) : (m.status || 'infeasible') };
      });
    };
    bars(charts, 'bubble rate (cost - ideal) / cost', items(function (m) { return m.bubble_rate; }, function (m) { return pct(m.bubble_rate); }), BAR_COLOURS.bubble);
    bars(charts, 'cost (ms)', items(function (m) { return m.cost_ms; }, function (m) { return ms(m.cost_ms) + ' ms'; }), BAR_COLOURS.cost);
    bars(charts, 'peak activation memory per device (M_B)', items(function (m) { return m.peak_memory; },
      function (m) { return mem(m.peak_memory) + ' M_B' + (m.peak_memory_bytes ? ' (' + (m.peak_memory_bytes / 1048576).toFixed(1) + ' MiB)' : ''); }), BAR_COLOURS.memory);

    el('h2', null, root, 'Timelines');
    var bar = el('div', { class: 'toolbar' }, root);
    var link = el('label', null, bar);
    var linkBox = el('input', { type: 'checkbox', class: 'link-zoom' }, link);
    linkBox.checked = true;
    link.appendChild(document.createTextNode(' zoom all timelines together'));
    var reset = el('button', { type: 'button', class: 'reset-zoom' }, bar, 'show everything');
    el('span', { class: 'help' }, bar, 'wheel: zoom · drag: pan · shift+wheel: scroll in time · overview: drag or draw the brush · drag over device names: those devices · click a task: follow its micro-batch · double-click: reset');
    legend(root, doc, runs);

    runs.forEach(function (run, i) {
      var block = el('div', { class: 'schedule', id: 'schedule-' + i }, root);
      var head = el('div', { class: 'head' }, block);
      el('h3', { class: 'schedule-name' }, head, run.name);
      var m = run.metrics || {};
      el('span', { class: 'sub' }, head, 'p=' + run.devices + ' m=' + run.src.microbatches + ' v=' + run.chunks +
        (run.src.iterations > 1 ? ' ×' + run.src.iterations + ' iterations' : '') + ' · ' + run.total + ' tasks · cost ' + ms(m.cost_ms) + ' ms · bubble rate ' + pct(m.bubble_rate) + ' · peak ' + mem(m.peak_memory) + ' M_B');
      var tl = new Timeline(page, run, el('div', { class: 'timeline-box' }, block));
      page.timelines.push(tl);
    });
    linkBox.addEventListener('change', function () {
      // Unlinked, each timeline keeps its own view, starting from the shared one.
      page.timelines.forEach(function (tl) {
        var v = linkBox.checked ? page.view : new View(page.view.span);
        if (!linkBox.checked) { v.a = page.view.a; v.b = page.view.b; }
        tl.view.listeners = tl.view.listeners.filter(function (x) { return x !== tl; });
        tl.view = v;
        v.listeners.push(tl);
        tl.request();
      });
    });
    reset.addEventListener('click', function () {
      page.timelines.forEach(function (tl) { tl.d0 = 0; tl.d1 = tl.run.devices - 1; tl.selected = null; tl.view.reset(tl); });
    });

    el('h2', null, root, 'Parameters and costs');
    runs.forEach(function (run) {
      var det = el('details', null, root);
      el('summary', null, det, run.name);
      var box = el('div', { class: 'details' }, det);
      var t = el('table', { class: 'parameters' }, box);
      el('th', { class: 'name', colspan: 2 }, el('tr', null, t), 'parameters');
      var row = function (k, v) { var tr = el('tr', null, t); el('td', { class: 'name' }, tr, k); el('td', { class: 'name' }, tr, v); };
      run.src.parameters.forEach(function (p) { row(p[0], p[1]); });
      row('cost provenance', run.src.costs);
      row('comm', ms(run.src.comm_ms) + ' ms per cross-device edge');
      row('memory limit', run.src.mem_limit !== null ? mem(run.src.mem_limit) + ' M_B' : 'none');
      if (run.src.mem_unit_bytes > 0) row('M_B', run.src.mem_unit_bytes.toPrecision(6) + ' bytes');
      var dt = el('table', { class: 'devices' }, box);
      var hr = el('tr', null, dt);
      ['device', 'busy ms', 'span ms', 'idle ms', 'peak M_B', 'messages', 'comm wait ms'].forEach(function (h) { el('th', null, hr, h); });
      ((run.metrics || {}).per_device || []).forEach(function (d) {
        var tr = el('tr', null, dt);
        [d.device, ms(d.busy_ms), ms(d.span_ms), ms(d.idle_ms), mem(d.peak_memory), d.p2p_messages, ms(d.comm_wait_ms)].forEach(function (v) { el('td', null, tr, String(v)); });
      });
      var sc = run.src.stage_costs, st = el('table', { class: 'stage-costs' }, box);
      var sh = el('tr', null, st);
      ['stage', 'F ms', 'B ms', 'W ms', 'BW ms', 'M_B', 'M_W'].forEach(function (h) { el('th', null, sh, h); });
      for (var s = 0; s < sc.F.length && s < 32; s++) {
        var tr = el('tr', null, st);
        [s, ms(sc.F[s]), ms(sc.B[s]), ms(sc.W[s]), ms(sc.BW[s]), mem(sc.MB[s]), mem(sc.MW[s])].forEach(function (v) { el('td', null, tr, String(v)); });
      }
      if (sc.F.length > 32) el('td', { class: 'name', colspan: 7 }, el('tr', null, st), '... ' + (sc.F.length - 32) + ' more stages');
      // Where the model's time goes, per stage: F + B + W (and a recomputed forward) of one
      // micro-batch, by part, and the stage's optimizer step.
      var tp = run.src.time_parts;
      if (tp) {
        var pt = el('table', { class: 'time-parts' }, box);
        el('caption', null, pt, 'where the time goes, per stage: F + B + W of one micro-batch (ms)');
        var ph = el('tr', null, pt);
        ['stage', 'GEMM', 'attention', 'memory-bound', 'TP comm', 'EP all-to-all', 'kernel overhead', 'memory-bound share', 'optimizer step'].forEach(function (h) { el('th', null, ph, h); });
        for (var q = 0; q < tp.gemm.length && q < 32; q++) {
          var all = tp.gemm[q] + tp.attention[q] + tp.memory[q] + tp.tp_comm[q] + tp.ep_comm[q] + tp.overhead[q];
          var pr = el('tr', null, pt);
          [q, ms(tp.gemm[q]), ms(tp.attention[q]), ms(tp.memory[q]), ms(tp.tp_comm[q]), ms(tp.ep_comm[q]), ms(tp.overhead[q]), pct(all > 0 ? tp.memory[q] / all : 0), ms(tp.optimizer[q])].forEach(function (v) { el('td', null, pr, String(v)); });
        }
        if (tp.gemm.length > 32) el('td', { class: 'name', colspan: 9 }, el('tr', null, pt), '... ' + (tp.gemm.length - 32) + ' more stages');
      }
    });

    // Draw every timeline once, one per frame (the page shows at once, the rest follows); after
    // that only those on screen redraw, the others when they come into view.
    var show = function (tl) { tl.visible = true; if (tl.dirty) tl.request(); };
    var first = function (i) {
      if (i >= page.timelines.length) { root.setAttribute('data-ready', 'true'); return; }
      var tl = page.timelines[i];
      if (tl.dirty) tl.draw();
      requestAnimationFrame(function () { first(i + 1); });
    };
    first(0);
    if ('IntersectionObserver' in window) {
      var io = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          var tl = page.timelines.filter(function (t) { return t.box === e.target; })[0];
          if (!tl) return;
          if (e.isIntersecting) show(tl); else tl.visible = false;
        });
      }, { rootMargin: '300px' });
      page.timelines.forEach(function (tl) { io.observe(tl.box); });
      page.observer = io;
    } else {
      page.timelines.forEach(show);
    }
    var resized = 0;
    window.addEventListener('resize', function () {
      clearTimeout(resized);
      resized = setTimeout(function () { page.timelines.forEach(function (tl) { tl.request(); }); }, 100);
    });
    window.ppsimPage = page;
    return page;
  }

  // ------------------------------------------------------------------------------------------
  // The sweep page: line charts (SVG) with a legend of toggles.

  // Small multiples: the charts of one group (a panel per schedule) side by side over the page's
  // width, on one x and one y scale (over the series shown in any panel), one style per series
  // name across the panels.
  function sweepGroup(parent, title, charts) {
    var fig = el('div', { class: 'chart-group', 'data-group': title }, parent);
    el('h3', null, fig, title);
    var grid = el('div', { class: 'facets' }, fig);
    var panels = [];
    var scale = function () {
      var xs = [], ymax = 0, first = charts[0];
      panels.forEach(function (p) {
        p.chart.series.forEach(function (s, k) {
          if (p.off[k]) return;
          s.points.forEach(function (q) { if (!first.log_x || q[0] > 0) { xs.push(q[0]); ymax = Math.max(ymax, q[1]); } });
        });
      });
      xs.sort(function (a, b) { return a - b; });
      return { xs: xs.filter(function (x, i) { return i === 0 || x !== xs[i - 1]; }), ymax: ymax };
    };
    var redraw = function () { var sc = scale(); panels.forEach(function (p) { p.draw(sc); }); };
    charts.forEach(function (c) { panels.push(lineChart(grid, c, redraw, charts.length > 1)); });
    redraw();
  }

  function lineChart(parent, chart, redraw, facet) {
    var box = el('div', { class: 'chart-box', 'data-chart': (chart.group ? chart.group + ': ' : '') + chart.title }, parent);
    el('h4', null, box, chart.title);
    var W = facet ? 520 : 900, H = facet ? 300 : 360, L = 52, R = 14, T = 10, B = 42, pw = W - L - R, ph = H - T - B;
    var svg = sel('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart lines', preserveAspectRatio: 'xMinYMin meet' }, box);
    var off = {};
    var draw = function (sc) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var xs = sc.xs, ymax = sc.ymax;
      var xv = function (x) { return chart.log_x ? Math.log2(x) : x; };
      var lo = xs.length ? xv(xs[0]) : 0, hi = xs.length ? xv(xs[xs.length - 1]) : 1;
      if (chart.x_from_zero && !chart.log_x) lo = Math.min(lo, 0);
      if (hi <= lo) { lo -= 1; hi += 1; }
      var step = tickStep(ymax || 1, ph, 40), top = Math.max(step, Math.ceil((ymax || 1) / step - 1e-9) * step);
      var px = function (x) { return L + (xv(x) - lo) / (hi - lo) * pw; };
      var py = function (y) { return T + ph - y / top * ph; };
      var grid = sel('g', { stroke: '#e2e2e2' }, svg), text = sel('g', { fill: '#333', 'font-size': 11 }, svg);
      for (var y = 0; y <= top + 1e-9; y += step) {
        sel('line', { x1: L, x2: L + pw, y1: py(y), y2: py(y) }, grid);
        sel('text', { x: L - 5, y: py(y) + 4, 'text-anchor': 'end' }, text).textContent = trim(y.toPrecision(4));
      }
      // x ticks at the data's values (or even steps when there are many), never overlapping.
      var ticks = xs;
      if (xs.length > 12 || !xs.length) {
        ticks = [];
        for (var i = 0; i <= 6; i++) { var v = lo + (hi - lo) * i / 6; ticks.push(chart.log_x ? Math.pow(2, v) : v); }
      }
      var lastRight = -Infinity;
      ticks.forEach(function (x) {
        var s = trim((+x).toPrecision(4)), half = s.length * 3.3;
        if (px(x) - half < lastRight + 6) return;
        lastRight = px(x) + half;
        sel('line', { x1: px(x), x2: px(x), y1: T, y2: T + ph }, grid);
        sel('text', { x: px(x), y: T + ph + 15, 'text-anchor': 'middle', class: 'x-tick' }, text).textContent = s;
      });
      sel('line', { x1: L, x2: L + pw, y1: T + ph, y2: T + ph, stroke: '#555' }, svg);
      sel('line', { x1: L, x2: L, y1: T, y2: T + ph, stroke: '#555' }, svg);
      sel('text', { x: L + pw / 2, y: H - 6, 'text-anchor': 'middle', 'font-size': 12 }, svg).textContent = chart.x_label + (chart.log_x ? ' (log scale)' : '');
      sel('text', { transform: 'translate(13,' + (T + ph / 2) + ') rotate(-90)', 'text-anchor': 'middle', 'font-size': 12 }, svg).textContent = chart.y_label;
      chart.series.forEach(function (s, k) {
        if (off[k]) return;
        var g = sel('g', { class: 'series', 'data-series': s.name }, svg);
        var pts = s.points.filter(function (p) { return !chart.log_x || p[0] > 0; });
        if (pts.length > 1 && s.joined !== false)
          sel('polyline', { fill: 'none', stroke: s.colour, 'stroke-width': 1.8, 'stroke-dasharray': s.dash || 'none',
            points: pts.map(function (p) { return px(p[0]).toFixed(1) + ',' + py(p[1]).toFixed(1); }).join(' ') }, g);
        pts.forEach(function (p) {
          var c = sel('circle', { cx: px(p[0]), cy: py(p[1]), r: s.joined === false ? 3.8 : 3.2, fill: s.colour }, g);
          c.addEventListener('mousemove', function (e) { showTip(p[2], e.clientX, e.clientY); });
          c.addEventListener('mouseleave', hideTip);
        });
      });
      svg.setAttribute('data-series-shown', chart.series.length - Object.keys(off).filter(function (k) { return off[k]; }).length);
    };
    var toggles = el('div', { class: 'series-toggles' }, box);
    chart.series.forEach(function (s, k) {
      var lab = el('label', { 'data-series': s.name }, toggles);
      var cb = el('input', { type: 'checkbox' }, lab);
      cb.checked = true;
      var sw = sel('svg', { width: 26, height: 10 }, lab);
      if (s.joined === false) sel('circle', { cx: 13, cy: 5, r: 3.5, fill: s.colour }, sw);
      else sel('line', { x1: 1, x2: 25, y1: 5, y2: 5, stroke: s.colour, 'stroke-width': 2, 'stroke-dasharray': s.dash || 'none' }, sw);
      lab.appendChild(document.createTextNode(s.name + (s.points.length ? '' : ' (no points)')));
      cb.addEventListener('change', function () { off[k] = !cb.checked; lab.classList.toggle('off', !cb.checked); redraw(); });
    });
    var all = el('button', { type: 'button', class: 'all-series' }, toggles, 'all / none');
    all.addEventListener('click', function () {
      var anyOn = chart.series.some(function (s, k) { return !off[k]; });
      Array.prototype.forEach.call(toggles.querySelectorAll('input'), function (cb, k) { cb.checked = !anyOn; off[k] = anyOn; cb.parentNode.classList.toggle('off', anyOn); });
      redraw();
    });
    return { chart: chart, off: off, draw: draw };
  }

  function renderSweep(root, doc) {
    root.textContent = '';
    root.setAttribute('data-schema', doc.schema);
    // Consecutive charts of one group are its panels.
    var groups = [];
    doc.charts.forEach(function (c) {
      var g = groups.length ? groups[groups.length - 1] : null;
      if (g && c.group && g.title === c.group) g.charts.push(c);
      else groups.push({ title: c.group || c.title, charts: [c] });
    });
    groups.forEach(function (g) { sweepGroup(root, g.title, g.charts); });
  }

  function render(root, doc) {
    var page = doc.schema === 'ppsim.sweep-report/2' ? renderSweep(root, doc) : renderReport(root, doc);
    tables(document);
    return page;
  }

  // Any server-written table.sortable (the sweep's points) sorts by its headers too.
  function tables(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll('table.sortable.static'), function (table) {
      if (table.getAttribute('data-bound')) return;
      table.setAttribute('data-bound', '1');
      var head = table.rows[0];
      Array.prototype.forEach.call(head.cells, function (th, i) {
        var dir = 1;
        th.addEventListener('click', function () {
          var rows = Array.prototype.slice.call(table.rows, 1);
          var key = function (r) { var t = r.cells[i] ? r.cells[i].textContent.replace('%', '') : ''; var n = parseFloat(t); return isNaN(n) ? t : n; };
          rows.sort(function (a, b) { var x = key(a), y = key(b); return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * dir; });
          Array.prototype.forEach.call(head.cells, function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
          th.classList.add(dir > 0 ? 'sorted-asc' : 'sorted-desc');
          dir = -dir;
          rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
        });
      });
    });
  }

  window.ppsim = { render: render, format: { ms: ms, pct: pct, mem: mem } };
})();
