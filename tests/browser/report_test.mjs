// Browser test of the reports (`compare --html`, `sweep --html`) in Debian's Chromium: every task
// drawn, hover details, zoom, the device range, the micro-batch chain, the sortable table, the
// sweep's legend toggles and ticks; and the size and load time of a large report.
//
//   node tests/browser/report_test.mjs build/dev/ppsim build/browser-artefacts
import { execFileSync } from 'node:child_process';
import { mkdtempSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checks, artefacts, browser, taskPoint, timelines } from './harness.mjs';

const ppsim = process.argv[2] || 'build/dev/ppsim';
const out = artefacts(process.argv[3] || 'build/browser-artefacts');
const work = mkdtempSync(join(tmpdir(), 'ppsim-report-test-'));
const check = new Checks('report browser test');
const run = (args) => execFileSync(ppsim, args, { encoding: 'utf8' });

const b = await browser();
try {
  // --- a small comparison: p = 4, m = 8 ---
  const small = join(work, 'small.html');
  run(['compare', '-s', '1f1b,zb-h1,zb-v,dualpipe-v', '-p', '4', '-m', '8', '--costs', 'F=2,B=2,W=2',
       '--mem-limit', '2p', '--html', small]);
  const metrics = JSON.parse(run(['compare', '-s', '1f1b,zb-h1,zb-v,dualpipe-v', '-p', '4', '-m', '8',
                                  '--costs', 'F=2,B=2,W=2', '--mem-limit', '2p', '--json']));
  const page = await b.page();
  await page.goto('file://' + small);
  await page.waitForSelector('#ppsim-root[data-ready="true"]');
  let tl = await timelines(page);
  check.equal(tl.map((t) => t.schedule).join(','), metrics.map((m) => m.schedule).join(','), 'one timeline per schedule, in order');
  for (let i = 0; i < tl.length; i++)
    check.ok(tl[i].drawn === metrics[i].tasks && tl[i].tasks === metrics[i].tasks,
      `${tl[i].schedule}: ${metrics[i].tasks} tasks, all drawn`, tl[i]);
  const bubbles = await page.$$eval('table.metrics td[data-key="bubble rate"]', (tds) => tds.map((td) => [td.dataset.value, td.textContent]));
  check.ok(bubbles.every((v, i) => +v[0] === metrics[i].bubble_rate && v[1] === (100 * metrics[i].bubble_rate).toFixed(2) + '%'),
    'the table shows compare --json\'s bubble rates', bubbles);
  // Sort by bubble rate: ascending, then descending.
  await page.click('table.metrics th:has-text("bubble rate")');
  const sorted = await page.$$eval('table.metrics td[data-key="bubble rate"]', (tds) => tds.map((td) => +td.dataset.value));
  check.ok(sorted.every((x, i) => i === 0 || sorted[i - 1] <= x), 'the table sorts by a column', sorted);
  // Hover: the tooltip names the task and what it waited for.
  let pt = await taskPoint(page, 1, 1, 2);  // zb-h1, device 1, its third task
  await page.mouse.move(pt.x, pt.y);
  const tip = await page.$eval('#ppsim-tip', (t) => ({ shown: t.style.display, text: t.textContent }));
  check.ok(tip.shown === 'block' && /on device 1/.test(tip.text) && /start .* ms, end .* ms, duration 2 ms/.test(tip.text) &&
    /waited for/.test(tip.text), 'hovering a task shows its details', tip.text);
  await page.screenshot({ path: join(out, 'report-hover.png') });
  // Click: its micro-batch's chain across the devices.
  await page.mouse.click(pt.x, pt.y);
  await page.waitForFunction(() => document.querySelectorAll('.timeline-box')[1].dataset.selectedMb !== '');
  tl = await timelines(page);
  check.ok(tl[1].selected !== '', 'a click highlights the micro-batch\'s chain', tl[1].selected);
  // Wheel: zoom in around the pointer, every timeline (linked) shows the narrower range.
  const before = tl[0].b - tl[0].a;
  await page.mouse.move(pt.plotX, pt.y);
  await page.mouse.wheel(0, -600);
  await page.waitForFunction((w) => { const b = document.querySelector('.timeline-box'); return +b.dataset.viewEnd - +b.dataset.viewStart < w * 0.8; }, before);
  tl = await timelines(page);
  check.ok(tl.every((t) => t.b - t.a < before * 0.8), 'the wheel zooms every linked timeline', tl.map((t) => [t.a, t.b]));
  check.ok(tl[1].drawn < tl[1].tasks, 'zoomed in, only the tasks in range are drawn', tl[1]);
  await page.screenshot({ path: join(out, 'report-zoomed.png') });
  // Double-click: everything again.
  await page.mouse.dblclick(pt.plotX, pt.y);
  await page.waitForFunction((w) => { const b = document.querySelector('.timeline-box'); return +b.dataset.viewEnd - +b.dataset.viewStart >= w; }, before);
  check.ok(true, 'a double-click shows everything again');
  check.equal(b.errors.length, 0, 'no script errors');
  await page.close();

  // --- an offload: the memory curve also draws what the device holds on the host ---
  const off = join(work, 'offload.html');
  run(['compare', '-s', '1f1b,zb-h1', '-p', '4', '-m', '8', '--costs', 'F=1,B=1,W=1,copy=0.3',
       '--offload', 'stages=0', '--html', off]);
  const po = await b.page();
  await po.goto('file://' + off);
  await po.waitForSelector('#ppsim-root[data-ready="true"]');
  const head = await po.$$eval('.timeline-box', (boxes) => boxes.map((x) => x.textContent));
  check.ok(head.length === 2 && head.every((t) => /held on the host/.test(t)),
    'with an offload the memory curve says it also shows the host', head.map((t) => t.slice(0, 120)));
  await po.screenshot({ path: join(out, 'report-offload.png') });
  check.equal(b.errors.length, 0, 'no script errors with an offload');
  await po.close();

  // --- a model's costs: each run's details say where each stage's time goes ---
  const mod = join(work, 'model.html');
  run(['compare', '-s', '1f1b,zb-v', '-p', '4', '-m', '8', '--model', 'llama3-8b', '--device', 'h100',
       '--tp', '2', '--html', mod]);
  const pm = await b.page();
  await pm.goto('file://' + mod);
  await pm.waitForSelector('#ppsim-root[data-ready="true"]');
  const parts = await pm.$$eval('table.time-parts', (ts) => ts.map((t) => ({
    rows: t.querySelectorAll('tr').length, head: t.querySelector('tr').textContent,
    first: t.querySelectorAll('tr')[1].textContent })));
  check.ok(parts.length === 2 && parts[0].rows === 1 + 4 && parts[1].rows === 1 + 8 &&
    parts.every((t) => /GEMM/.test(t.head) && /TP comm/.test(t.head) && /optimizer step/.test(t.head)),
    'with a model each run shows its stages\' time by part (4 stages of 1f1b, 8 of zb-v)', parts);
  check.equal(b.errors.length, 0, 'no script errors with a model');
  await pm.close();
  const pp = await b.page();
  await pp.goto('file://' + small);
  await pp.waitForSelector('#ppsim-root[data-ready="true"]');
  check.equal(await pp.$$eval('table.time-parts', (ts) => ts.length), 0,
    'costs given as numbers show no breakdown');
  await pp.close();

  // --- sequence slices: a task is named by its micro-batch and slice ---
  const sl = join(work, 'sliced.html');
  run(['compare', '-s', 'seq1f1b', '--slices', '2', '-p', '2', '-m', '2', '--costs', 'F=4,B=4,W=4', '--html', sl]);
  const ps = await b.page();
  await ps.goto('file://' + sl);
  await ps.waitForSelector('#ppsim-root[data-ready="true"]');
  const spt = await taskPoint(ps, 0, 0, 1);  // device 0's second task: F of micro-batch 0, slice 1
  await ps.mouse.move(spt.x, spt.y);
  const stip = await ps.$eval('#ppsim-tip', (t) => ({ shown: t.style.display, text: t.textContent }));
  check.ok(stip.shown === 'block' && /micro-batch 0, slice 1/.test(stip.text) && /follow slice 0\.s1/.test(stip.text),
    'hovering a sliced task names its micro-batch and slice', stip.text);
  check.equal(b.errors.length, 0, 'no script errors with slices');
  await ps.close();

  // --- legible at p = 16, m = 128: zoom into a device range and a time range ---
  const mid = join(work, 'mid.html');
  run(['compare', '-s', 'zb-v,dualpipe-v', '-p', '16', '-m', '128', '--costs', 'F=1,B=1,W=1,comm=0.05', '--html', mid]);
  const p2 = await b.page();
  await p2.goto('file://' + mid);
  await p2.waitForSelector('#ppsim-root[data-ready="true"]');
  pt = await taskPoint(p2, 0, 4, 0);
  // Drag over the names of devices 4..7.
  await p2.mouse.move(pt.labelX, pt.top + 4 * pt.rowStep + 2);
  await p2.mouse.down();
  await p2.mouse.move(pt.labelX, pt.top + 6 * pt.rowStep, { steps: 3 });
  await p2.mouse.move(pt.labelX, pt.top + 7 * pt.rowStep + 2, { steps: 3 });
  await p2.mouse.up();
  await p2.waitForFunction(() => document.querySelector('.timeline-box').dataset.devicesShown === '4-7');
  check.ok(true, 'a drag over device names shows those devices only');
  // Brush the minimap to the first tenth of the time.
  const mini = await p2.evaluate(() => { const tl = window.ppsimPage.timelines[0], r = tl.mini.getBoundingClientRect(); return { x: r.left + tl.L, w: tl.W, y: r.top + r.height / 2 }; });
  await p2.mouse.move(mini.x + mini.w * 0.02, mini.y);
  await p2.mouse.down();
  await p2.mouse.move(mini.x + mini.w * 0.07, mini.y, { steps: 4 });
  await p2.mouse.move(mini.x + mini.w * 0.12, mini.y, { steps: 4 });
  await p2.mouse.up();
  tl = await timelines(p2);
  const span = await p2.evaluate(() => window.ppsimPage.view.span);
  check.ok(Math.abs(tl[0].a - 0.02 * span) < 0.01 * span && Math.abs(tl[0].b - 0.12 * span) < 0.01 * span,
    'a brush on the overview sets the time range', [tl[0].a, tl[0].b, span]);
  const labelled = await p2.evaluate(() => { const tl = window.ppsimPage.timelines[0]; return [tl.rowH, tl.drawn]; });
  check.ok(labelled[0] >= 20, 'the chosen devices get tall rows', labelled);
  const box = await p2.$('.timeline-box');
  await box.screenshot({ path: join(out, 'report-p16-m128-devices-4-7.png') });
  check.equal(b.errors.length, 0, 'no script errors');
  await p2.close();

  // --- a schedule that does not fit: the bars follow the table's order; the bubble bars wear
  // the idle hatch, a fill no task has ---
  const unfit = join(work, 'unfit.html');
  run(['compare', '-s', '1f1b,zb-h2,zb-h1', '-p', '4', '-m', '8', '--mem-limit', '1p', '--html', unfit]);
  const pu = await b.page();
  await pu.goto('file://' + unfit);
  await pu.waitForSelector('#ppsim-root[data-ready="true"]');
  const rows = await pu.$$eval('table.metrics tbody tr', (trs) => trs.map((tr) => tr.dataset.schedule));
  const barRows = await pu.$$eval('.bars', (bs) => bs.map((x) => Array.from(x.querySelectorAll('.label')).map((l) => l.textContent).join(',')));
  check.ok(rows.join(',') === '1f1b,zb-h1,zb-h2' && barRows.every((r) => r === rows.join(',')),
    'with an unfit schedule the bars are in the table\'s order', { rows, barRows });
  const fills = await pu.evaluate(() => {
    const doc = JSON.parse(document.getElementById('ppsim-data').textContent);
    const palette = Object.values(doc.palette).flat();
    const bubble = document.querySelector('.bars[data-chart^="bubble"] .fill').style.background;
    return { bubble, palette, taskLike: palette.some((c) => bubble.includes(c)) };
  });
  check.ok(/repeating-linear-gradient/.test(fills.bubble) && !fills.taskLike, 'the bubble bars are not a task\'s colour', fills.bubble);
  await pu.screenshot({ path: join(out, 'report-unfit.png'), fullPage: true });
  check.equal(b.errors.length, 0, 'no script errors with an unfit schedule');
  await pu.close();

  // --- the sweep page: a panel per schedule over the page's width, one scale and one style per
  // series across the panels, toggles, ticks that do not overlap ---
  const sweep = join(work, 'sweep.html');
  run(['sweep', '-s', '1f1b,zb-h1,zb-h2,zb-v,v-half,interleaved-1f1b', '-p', '4,8', '-m', '8,16,24,32,48,64', '--html', sweep]);
  const p3 = await b.page();
  await p3.goto('file://' + sweep);
  await p3.waitForSelector('svg.chart.lines');
  const groups = await p3.$$eval('.chart-group', (gs) => gs.map((g) => ({
    panels: Array.from(g.querySelectorAll('.chart-box h4')).map((h) => h.textContent),
    shown: Array.from(g.querySelectorAll('.chart-box svg.chart')).map((x) => +x.dataset.seriesShown),
    tops: Array.from(g.querySelectorAll('.chart-box svg.chart')).map((x) => { const t = Array.from(x.querySelectorAll('text[text-anchor="end"]')); return t.length ? t[t.length - 1].textContent : ''; }),
    right: Math.max(...Array.from(g.querySelectorAll('.chart-box')).map((c) => c.getBoundingClientRect().right)),
  })));
  const panelNames = '1f1b,zb-h1,zb-h2,zb-v,v-half,interleaved-1f1b';
  check.ok(groups.length === 2 && groups.every((g) => g.panels.join(',') === panelNames && g.shown.every((n) => n === 2)),
    'two figures, a panel per schedule, p = 4 and p = 8 in each', groups);
  check.ok(groups.every((g) => new Set(g.tops).size === 1), 'the panels of a figure share the y scale', groups.map((g) => g.tops));
  const width = await p3.evaluate(() => window.innerWidth);
  check.ok(groups.every((g) => g.right > 0.9 * width), 'the panels use the page\'s width', { width, right: groups.map((g) => g.right) });
  const styles = await p3.$$eval('.chart-group:first-of-type .chart-box', (bs) => bs.map((c) => Array.from(c.querySelectorAll('.series polyline')).map((l) => l.getAttribute('stroke') + ' ' + l.getAttribute('stroke-dasharray')).join('|')));
  check.ok(new Set(styles).size === 1 && styles[0].split('|').length === 2 && new Set(styles[0].split('|')).size === 2,
    'p = 4 and p = 8 differ, and look the same in every panel', styles);
  await p3.click('.chart-group:first-of-type .chart-box:first-of-type .series-toggles label >> nth=0');
  await p3.waitForFunction(() => document.querySelector('.chart-box svg').dataset.seriesShown === '1');
  check.ok(true, 'a legend entry toggles its series');
  const overlap = await p3.$$eval('.chart-box', (cs) => cs.some((c) => {
    const boxes = Array.from(c.querySelectorAll('.x-tick')).map((t) => t.getBoundingClientRect()).sort((a, b) => a.left - b.left);
    return boxes.some((r, i) => i > 0 && r.left < boxes[i - 1].right && r.top < boxes[i - 1].bottom && boxes[i - 1].top < r.bottom);
  }));
  check.ok(!overlap, 'no two tick labels overlap');
  const legend = await p3.$$eval('.series-toggles', (ls) => ls.every((l) => l.scrollWidth <= l.clientWidth + 1 && l.getBoundingClientRect().right <= window.innerWidth));
  check.ok(legend, 'the legends fit the page');
  await p3.screenshot({ path: join(out, 'sweep.png'), fullPage: true });
  check.equal(b.errors.length, 0, 'no script errors');
  await p3.close();

  // --- coinciding curves: one legend entry named for all; one point per shape: a scatter ---
  const same = join(work, 'same.html');
  run(['sweep', '-s', '1f1b,zb-auto', '-p', '4', '-m', '8,16', '--mem-limit', '1p,2p', '--html', same]);
  const p5 = await b.page();
  await p5.goto('file://' + same);
  await p5.waitForSelector('svg.chart.lines');
  const legends = await p5.$$eval('.chart-box', (cs) => cs.map((c) => Array.from(c.querySelectorAll('.series-toggles label')).map((l) => l.textContent)));
  check.ok(legends[0].join('|') === 'p=4 mem=1p = p=4 mem=2p' && legends[2].join('|') === 'p=4, one point per m (8, 16)',
    '1f1b\'s two limits are one curve named for both, its memory points one scatter', legends);
  await p5.screenshot({ path: join(out, 'sweep-coinciding.png'), fullPage: true });
  check.equal(b.errors.length, 0, 'no script errors');
  await p5.close();

  // --- large: p = 32, m = 256, ten schedules ---
  const big = join(work, 'big.html');
  const names = '1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-auto,zb-v,v-half,v-min,dualpipe,dualpipe-v';
  let t0 = Date.now();
  run(['compare', '-s', names, '-p', '32', '-m', '256', '--html', big]);
  const generated = Date.now() - t0;
  const p4 = await b.page();
  t0 = Date.now();
  await p4.goto('file://' + big);
  const loaded = Date.now() - t0;
  await p4.waitForSelector('#ppsim-root[data-ready="true"]', { timeout: 60000 });
  const ready = Date.now() - t0;
  tl = await timelines(p4);
  const total = tl.reduce((s, t) => s + t.tasks, 0);
  check.ok(tl.length === 10 && tl.every((t) => t.drawn === t.tasks), `p=32 m=256, ten schedules: all ${total} tasks drawn`);
  console.log(`  large report: ${(statSync(big).size / 1048576).toFixed(1)} MiB, written in ${generated} ms; ` +
              `load event after ${loaded} ms, every timeline drawn after ${ready} ms`);
  await p4.screenshot({ path: join(out, 'report-p32-m256.png') });
  check.equal(b.errors.length, 0, 'no script errors');
  await p4.close();
} catch (e) {
  check.ok(false, 'the test ran to its end', String(e && e.stack || e));
} finally {
  await b.close();
  rmSync(work, { recursive: true, force: true });
}
check.done();
