// Browser test of `ppsim serve`: load the playground, change p and a cost, wait for the redraw,
// and check the drawn tasks and the displayed bubble rates against the API; hover, zoom, a bad
// value's error, the address bar.
//
//   node tests/browser/playground_test.mjs build/dev/ppsim build/browser-artefacts
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Checks, artefacts, browser, taskPoint, timelines } from './harness.mjs';

const ppsim = process.argv[2] || 'build/dev/ppsim';
const out = artefacts(process.argv[3] || 'build/browser-artefacts');
const check = new Checks('playground browser test');

// The server on a free loopback port; its first line names the address.
const server = spawn(ppsim, ['serve', '--port', '0', '--profiles', 'data/costs'], { stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise((resolve, reject) => {
  let text = '';
  const timer = setTimeout(() => reject(new Error('ppsim serve did not start in 20 s')), 20000);
  server.stdout.on('data', (d) => {
    text += d;
    const m = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(text);
    if (m) { clearTimeout(timer); resolve(m[1]); }
  });
  server.on('exit', (code) => reject(new Error(`ppsim serve exited with ${code}`)));
});
const api = async (path) => { const r = await fetch(base + path); return { status: r.status, body: await r.text() }; };

// Waits until the page has drawn the answer to `query` (every timeline once).
async function drawn(page, query) {
  await page.waitForFunction((q) => document.body.dataset.state === 'ready' && document.body.dataset.query === q &&
    document.querySelector('#ppsim-root[data-ready="true"]') !== null, query, { timeout: 30000 });
}

const b = await browser();
try {
  const page = await b.page();
  await page.goto(base + '/?s=1f1b,zb-h1,zb-v&p=4&m=8&costs=F=2,B=2,W=2');
  const first = 's=1f1b%2Czb-h1%2Czb-v&p=4&m=8&costs=F%3D2%2CB%3D2%2CW%3D2';
  await drawn(page, first);
  let tl = await timelines(page);
  let metrics = JSON.parse((await api('/api/compare?' + first)).body);
  check.ok(tl.length === 3 && tl.every((t, i) => t.drawn === metrics[i].tasks), 'the page draws every task the API reports', [tl, metrics.map((m) => m.tasks)]);

  // Change p and a cost: the page asks again and redraws.
  await page.fill('input[name="p"]', '6');
  await page.fill('input[name="cost-F"]', '3');
  const second = 's=1f1b%2Czb-h1%2Czb-v&p=6&m=8&costs=F%3D3%2CB%3D2%2CW%3D2';
  await drawn(page, second);
  check.ok(page.url().endsWith('?' + second), 'the address bar holds the parameters', page.url());
  metrics = JSON.parse((await api('/api/compare?' + second)).body);
  tl = await timelines(page);
  check.ok(tl.length === 3 && tl.every((t, i) => t.tasks === metrics[i].tasks && t.drawn === metrics[i].tasks),
    `after p=6, F=3: ${metrics.map((m) => m.tasks).join(', ')} tasks drawn`, tl);
  const shown = await page.$$eval('table.metrics td[data-key="bubble rate"]', (tds) => tds.map((td) => [+td.dataset.value, td.textContent]));
  check.ok(shown.length === 3 && shown.every((s, i) => s[0] === metrics[i].bubble_rate && s[1] === (100 * metrics[i].bubble_rate).toFixed(2) + '%'),
    'the displayed bubble rates are the API\'s', [shown, metrics.map((m) => m.bubble_rate)]);
  check.equal(metrics[0].devices, 6, 'the API ran p=6');

  // Hover a task: the tooltip.
  const pt = await taskPoint(page, 0, 5, 0);
  await page.mouse.move(pt.x, pt.y);
  const tip = await page.$eval('#ppsim-tip', (t) => ({ shown: t.style.display, text: t.textContent }));
  check.ok(tip.shown === 'block' && /^5F0 on device 5/.test(tip.text) && /duration 3 ms/.test(tip.text) && /waited for 4F0 on device 4/.test(tip.text),
    'hovering shows the task, its times and what it waited for', tip.text);
  // Zoom: the visible range narrows.
  const before = tl[0].b - tl[0].a;
  await page.mouse.move(pt.plotX, pt.y);
  await page.mouse.wheel(0, -500);
  await page.waitForFunction((w) => { const x = document.querySelector('.timeline-box'); return +x.dataset.viewEnd - +x.dataset.viewStart < w * 0.8; }, before);
  tl = await timelines(page);
  check.ok(tl[0].b - tl[0].a < before * 0.8, 'the wheel zooms in', [before, tl[0].a, tl[0].b]);
  await page.screenshot({ path: join(out, 'playground.png'), fullPage: true });

  // A value over the server's limit: the CLI's error text, nothing redrawn, the previous results
  // dimmed and marked as the previous request's.
  await page.fill('input[name="p"]', '100');
  await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 30000 });
  const status = (await page.textContent('#status')).split('\n');
  const error = status[0];
  check.ok(/^ppsim: error: compare: --stages 100 is over this server's limit of 64/.test(error), 'a bad value shows the error text', error);
  check.equal(status[1], '(the results below are of the previous request)', 'the error says the results are the previous request\'s');
  const dim = await page.$eval('#ppsim-root', (r) => ({ stale: r.classList.contains('stale'), opacity: getComputedStyle(r).opacity, tables: r.querySelectorAll('table.metrics').length }));
  check.ok(dim.stale && +dim.opacity < 0.5 && dim.tables === 1, 'the previous table stays, dimmed', dim);
  const direct = await api('/api/timeline?s=1f1b&p=100&m=8');
  check.ok(direct.status === 400 && direct.body.trim() === error.trim(), 'the same error as the API\'s 400', direct);
  await page.screenshot({ path: join(out, 'playground-error.png') });

  // A cost profile from the server's folder.
  await page.fill('input[name="p"]', '4');
  await page.fill('input[name="cost-F"]', '');
  await page.fill('input[name="cost-B"]', '');
  await page.fill('input[name="cost-W"]', '');
  await page.selectOption('select[name="costs-file"]', 'example-mlp');
  const third = 's=1f1b%2Czb-h1%2Czb-v&p=4&m=8&costs-file=example-mlp';
  await drawn(page, third);
  check.ok(!(await page.$eval('#ppsim-root', (r) => r.classList.contains('stale'))), 'a good answer is no longer dimmed');
  metrics = JSON.parse((await api('/api/compare?' + third)).body);
  const costs = await page.$$eval('table.metrics td[data-key="cost ms"]', (tds) => tds.map((td) => +td.dataset.value));
  check.ok(costs.every((c, i) => c === metrics[i].cost_ms) && /example-mlp/.test(metrics[0].costs), 'a profile\'s costs', [costs, metrics[0].costs]);
  check.equal(b.errors.length, 0, 'no script errors');
} catch (e) {
  check.ok(false, 'the test ran to its end', String(e && e.stack || e));
} finally {
  await b.close();
  server.kill('SIGTERM');
}
check.done();
