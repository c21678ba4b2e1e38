// The browser tests' harness: Debian's Chromium through playwright-core (never a downloaded
// browser), a fresh profile per run, checks that count, and screenshots kept as artefacts.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const modules = process.env.PPSIM_NODE_MODULES || 'build/browser/node_modules';
const require = createRequire(join(process.cwd(), modules, 'x.js'));

export function playwright() {
  try {
    return require('playwright-core');
  } catch (e) {
    console.error(`browser test: FAIL: playwright-core not found under ${modules} (make browser-deps installs it)`);
    process.exit(1);
  }
}

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// A browser context on a fresh profile; `close()` removes the profile.
export async function browser(viewport = { width: 1400, height: 900 }) {
  const { chromium } = playwright();
  const profile = mkdtempSync(join(tmpdir(), 'ppsim-browser-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath, headless: true, args: flags, viewport,
  });
  const errors = [];
  context.on('page', (p) => p.on('pageerror', (e) => errors.push(e.message)));
  return {
    context, errors,
    async page() {
      const p = await context.newPage();
      p.on('pageerror', (e) => errors.push(e.message));
      return p;
    },
    async close() { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}

// Checks: each one a line; the summary line counts them.
export class Checks {
  constructor(name) { this.name = name; this.passed = 0; this.failed = 0; }
  ok(cond, what, detail) {
    if (cond) { this.passed++; console.log(`  ok   ${what}`); }
    else { this.failed++; console.log(`  FAIL ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
    return cond;
  }
  equal(got, want, what) { return this.ok(got === want, what, { got, want }); }
  done() {
    console.log(`${this.name}: ${this.passed} passed, ${this.failed} failed`);
    process.exit(this.failed === 0 ? 0 : 1);
  }
}

export function artefacts(dir) { mkdirSync(dir, { recursive: true }); return dir; }

// Every timeline's data attributes.
export async function timelines(page) {
  return page.$$eval('.timeline-box', (boxes) => boxes.map((b) => ({
    schedule: b.dataset.schedule, tasks: +b.dataset.tasks, drawn: +b.dataset.drawn,
    a: +b.dataset.viewStart, b: +b.dataset.viewEnd, devices: b.dataset.devicesShown,
    selected: b.dataset.selectedMb,
  })));
}

// The page coordinates of task i of device d in timeline t (its middle).
export async function taskPoint(page, t, d, i) {
  return page.evaluate(([t, d, i]) => {
    const tl = window.ppsimPage.timelines[t];
    tl.main.scrollIntoView({ block: 'center' });
    const D = tl.run.dev[d], u = tl.run.unit, r = tl.main.getBoundingClientRect();
    const x = tl.x((D.start[i] + D.end[i]) / 2 * u), y = (d - tl.d0) * (tl.rowH + tl.gap) + tl.rowH / 2;
    return { x: r.left + x, y: r.top + y, plotX: r.left + tl.L + tl.W / 2, labelX: r.left + 10, top: r.top, rowStep: tl.rowH + tl.gap };
  }, [t, d, i]);
}
