// `ppsim serve`'s page: controls for the schedules, the shape, the costs and the memory limit;
// every change asks /api/timeline with the command line's option names and redraws with the
// report's script (ppsim.render). The address bar holds the same parameters, so a view can be
// shared, and /api/compare with them returns `ppsim compare --json`.
(function () {
  'use strict';

  var config = JSON.parse(document.getElementById('ppsim-config').textContent);
  var form = document.getElementById('controls');
  var status = document.getElementById('status');
  var root = document.getElementById('ppsim-root');
  var api = document.getElementById('api-link');
  var COSTS = [['F', '1'], ['B', '1'], ['W', '1'], ['comm', '0'], ['MW', '0.5']];

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function field(parent, label, attrs) {
    var l = el('label', null, parent, label);
    return el('input', attrs, l);
  }

  // The controls.
  var sf = el('fieldset', null, form);
  el('legend', null, sf, 'schedules');
  var boxes = el('div', { class: 'schedules' }, sf);
  var checks = {};
  config.schedules.forEach(function (s) {
    var l = el('label', { title: s.description + ' (' + s.constraint + ')' }, boxes);
    checks[s.name] = el('input', { type: 'checkbox', name: 's', value: s.name }, l);
    l.appendChild(document.createTextNode(s.name));
  });
  var shape = el('fieldset', null, form);
  el('legend', null, shape, 'shape');
  var row = el('div', { class: 'row' }, shape);
  var p = field(row, 'p (devices)', { type: 'number', name: 'p', min: 1, max: config.limits.devices, step: 1 });
  var m = field(row, 'm (micro-batches)', { type: 'number', name: 'm', min: 1, max: config.limits.microbatches, step: 1 });
  var v = field(row, 'v (chunks)', { type: 'number', name: 'v', min: 0, max: config.limits.chunks, step: 1, placeholder: 'default' });
  var it = field(row, 'iterations', { type: 'number', name: 'iterations', min: 1, max: config.limits.iterations, step: 1, placeholder: '1' });
  var cf = el('fieldset', null, form);
  el('legend', null, cf, 'costs per device-stage (ms; M_W in M_B)');
  var crow = el('div', { class: 'row' }, cf);
  var cost = {};
  COSTS.forEach(function (c) {
    cost[c[0]] = field(crow, c[0] === 'MW' ? 'M_W' : c[0], { type: 'text', class: 'cost', name: 'cost-' + c[0], placeholder: c[1], inputmode: 'decimal' });
  });
  var extra = field(crow, 'more (BW=..,FB=..,MB=..)', { type: 'text', name: 'cost-extra', size: 14 });
  var prof = el('select', { name: 'costs-file' }, el('label', null, crow, 'profile'));
  el('option', { value: '' }, prof, 'none');
  config.profiles.forEach(function (name) { el('option', { value: name }, prof, name); });
  var mf = el('fieldset', null, form);
  el('legend', null, mf, 'memory');
  var limit = field(mf, 'limit (2p, 12, 3GiB)', { type: 'text', name: 'mem-limit', size: 8 });
  el('p', { class: 'help' }, form, 'Limits of this server: p ≤ ' + config.limits.devices + ', m ≤ ' + config.limits.microbatches +
    ', v ≤ ' + config.limits.chunks + ', iterations ≤ ' + config.limits.iterations + ', ' + config.limits.tasks + ' tasks, ' +
    config.limits.seconds + ' s per request.');

  // Parameters <-> controls. The names are the command line's.
  function read() {
    var q = new URLSearchParams();
    var names = config.schedules.map(function (s) { return s.name; }).filter(function (n) { return checks[n].checked; });
    q.set('s', names.join(','));
    if (p.value) q.set('p', p.value);
    if (m.value) q.set('m', m.value);
    if (v.value && v.value !== '0') q.set('v', v.value);
    var parts = [];
    COSTS.forEach(function (c) { var x = cost[c[0]].value.trim(); if (x) parts.push(c[0] + '=' + x); });
    if (extra.value.trim()) parts.push(extra.value.trim());
    if (parts.length) q.set('costs', parts.join(','));
    if (prof.value) q.set('costs-file', prof.value);
    if (limit.value.trim()) q.set('mem-limit', limit.value.trim());
    if (it.value && it.value !== '1') q.set('iterations', it.value);
    return q;
  }
  function write(q) {
    var wanted = (q.get('s') || q.get('schedule') || config.defaults.s).split(',');
    Object.keys(checks).forEach(function (n) { checks[n].checked = wanted.indexOf(n) >= 0; });
    p.value = q.get('p') || q.get('stages') || config.defaults.p;
    m.value = q.get('m') || q.get('microbatches') || config.defaults.m;
    v.value = q.get('v') || q.get('chunks') || '';
    it.value = q.get('iterations') || '';
    var rest = [];
    COSTS.forEach(function (c) { cost[c[0]].value = ''; });
    (q.get('costs') || '').split(',').forEach(function (kv) {
      if (!kv) return;
      var k = kv.split('=')[0];
      if (cost[k]) cost[k].value = kv.slice(k.length + 1); else rest.push(kv);
    });
    extra.value = rest.join(',');
    prof.value = q.get('costs-file') || '';
    limit.value = q.get('mem-limit') || '';
  }

  var seq = 0, timer = 0;
  // An error leaves the previous results on the page, dimmed and marked as not this request's.
  function failed(text) {
    status.className = 'error';
    status.textContent = text + (root.firstChild ? '\n(the results below are of the previous request)' : '');
    root.classList.add('stale');
    root.setAttribute('title', 'the previous request\'s results: this one failed');
    document.body.setAttribute('data-state', 'error');
  }
  function update() {
    var q = read(), query = q.toString();
    history.replaceState(null, '', '?' + query);
    api.href = '/api/compare?' + query;
    api.textContent = '/api/compare?' + decodeURIComponent(query);
    var mine = ++seq;
    status.className = 'busy';
    status.textContent = 'simulating…';
    root.setAttribute('aria-busy', 'true');
    fetch('/api/timeline?' + query).then(function (r) {
      return r.text().then(function (body) { return { ok: r.ok, code: r.status, body: body }; });
    }).then(function (res) {
      if (mine !== seq) return;  // a newer request is on its way
      root.removeAttribute('aria-busy');
      if (!res.ok) {
        failed(res.body.trim() || ('HTTP ' + res.code));
        return;
      }
      var doc = JSON.parse(res.body);
      root.classList.remove('stale');
      root.removeAttribute('title');
      window.ppsim.render(root, doc);
      var ran = doc.runs.length, asked = doc.metrics.length;
      status.className = '';
      status.textContent = ran + ' of ' + asked + ' schedule' + (asked === 1 ? '' : 's') + ' ran';
      document.body.setAttribute('data-state', 'ready');
      document.body.setAttribute('data-query', query);
    }).catch(function (e) {
      if (mine !== seq) return;
      failed('the server did not answer: ' + e);
    });
  }
  function later() { clearTimeout(timer); timer = setTimeout(update, 250); }
  form.addEventListener('input', later);
  form.addEventListener('change', later);
  form.addEventListener('submit', function (e) { e.preventDefault(); update(); });

  write(new URLSearchParams(location.search));
  update();
})();
