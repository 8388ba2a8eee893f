#!/usr/bin/env node
'use strict';
/*
 * a11y.t - accessibility and phones, in a real browser:
 *  - every lab's handout page renders its Markdown through libcmark-gfm: the
 *    cases table is a real <table> with one row per case of lab.json, and a
 *    screenshot of the handout is saved as screenshots/handout-<lab>.png;
 *  - each main page (sign in, labs, a lab, a submission result, the source,
 *    a student's list, scoreboard, help; for staff the result with its forms,
 *    all submissions, stats, audit log; for admins users, rubric editor,
 *    deadlines, queue, exports; an error page) goes through axe-core (npm, pinned in
 *    package.json) with no serious or critical violation, at desktop width
 *    and at 375 px;
 *  - at 375 px the page itself never scrolls sideways (tables and code
 *    scroll inside their own boxes); screenshots/mobile-lab.png and
 *    screenshots/mobile-result.png show a lab page and a result page there.
 * The PNGs go to $CUGRADE_BUILD/screenshots/a11y/, so a test run leaves the
 * checkout as it was (one mobile shot shows the submission time); with
 * CUGRADE_SCREENSHOTS=1 they replace the committed ones in
 * tests/pages/screenshots/ (docs/web.md shows them).
 */
const fs = require('fs');
const path = require('path');
const { Server, Runner, resultDoc, browser, newPage, signIn, kernel, submitApi, run, ROOT, SHOTS } = require('./lib');

const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SHOT_DIR = process.env.CUGRADE_SCREENSHOTS === '1'
  ? path.join(__dirname, 'screenshots')
  : path.join(SHOTS, 'a11y');
const PHONE = { width: 375, height: 740 };
const DESKTOP = { width: 1200, height: 860 };

/* axe-core's violations of impact serious or critical on the page now.
 * Injected through the devtools protocol (page.evaluate), which the page's
 * Content-Security-Policy does not govern, so the page runs as served. */
async function axeSerious(page) {
  await page.evaluate(AXE_SOURCE);
  const vs = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 4).map((n) => n.target.join(' ') + ' :: ' + (n.failureSummary || '').split('\n').slice(1, 3).join('; ')),
    }));
  });
  const serious = vs.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  serious.others = vs.filter((v) => !serious.includes(v)).map((v) => `${v.impact} ${v.id}`);
  return serious;
}

/* Page width against the viewport, with the elements that stick out past its
 * right edge when the page scrolls sideways (those not inside a box that
 * scrolls on its own). */
async function sideways(page) {
  return page.evaluate(() => {
    const de = document.documentElement;
    const out = { scrollWidth: de.scrollWidth, innerWidth: window.innerWidth, culprits: [] };
    if (de.scrollWidth <= window.innerWidth) return out;
    const inScroller = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const ox = getComputedStyle(p).overflowX;
        if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') return true;
      }
      return false;
    };
    for (const el of document.body.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.right > window.innerWidth + 0.5 && !inScroller(el)) {
        const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
          (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
        out.culprits.push(`${name} right=${Math.round(r.right)}`);
        if (out.culprits.length >= 8) break;
      }
    }
    return out;
  });
}

function describe(vs) {
  return vs.map((v) => `${v.impact} ${v.id}: ${v.help}\n` + v.nodes.map((n) => '    ' + n).join('\n')).join('\n');
}

async function save(page, name, opts = {}) {
  fs.mkdirSync(SHOT_DIR, { recursive: true });
  if (opts.element) await page.locator(opts.element).screenshot({ path: path.join(SHOT_DIR, name + '.png') });
  else await page.screenshot({ path: path.join(SHOT_DIR, name + '.png'), fullPage: true });
}

/* The labs of this checkout with a handout, a lab.json and a rubric (what
 * the test server serves), with their case names. */
function repoLabs() {
  const labs = [];
  const dir = path.join(ROOT, 'labs');
  for (const n of fs.readdirSync(dir).sort()) {
    const lj = path.join(dir, n, 'lab.json');
    if (!fs.existsSync(lj) || !fs.existsSync(path.join(dir, n, 'README.md')) ||
        !fs.existsSync(path.join(ROOT, 'rubrics', n + '.json'))) continue;
    labs.push({ lab: n, cases: JSON.parse(fs.readFileSync(lj, 'utf8')).cases.map((c) => c.name) });
  }
  return labs;
}

run(async (t) => {
  const s = new Server();
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  try {
    // A graded submission with feedback to look at: a failed case, a
    // sanitizer finding with its hint, Markdown in the hints, a timing chart.
    const id = await submitApi(s, 'alice', 'vadd', kernel('a11y') + '\n'.repeat(30) + '// ' + 'x'.repeat(300) + '\n', 'vadd_kernel_with_a_long_file_name_for_phones.cu');
    const job = await runner.claimId(id);
    await runner.result(job, 'graded', resultDoc(job, {
      score: 55,
      cases: [
        { name: 'small', passed: false, max_abs_err: 0.5, max_rel_err: 0.25, first_bad_index: 999, unwritten: 1,
          message: 'c[999] = NaN but expected 1.25: 1 of 1000 outputs were never written' },
        { name: 'big', passed: true, max_abs_err: 0, max_rel_err: 0, first_bad_index: null, unwritten: 0, message: '' },
      ],
      sanitizer: [
        { tool: 'memcheck', clean: false, findings: [{ file: 'kernel.cu', line: 5, message: 'Invalid __global__ read of size 4 bytes', hint: 'An out-of-bounds access: add a bounds check (`if (i < n)`) before reading.' }] },
        { tool: 'racecheck', clean: true, findings: [] },
      ],
      hints: ['Some outputs were never written: round the block count up: `(n + block - 1) / block`.',
        'See **How it is graded** in the handout.'],
    }));
    const other = await submitApi(s, 'bob', 'vadd', kernel('bob'), 'bob.cu');
    const job2 = await runner.claimId(other);
    await runner.result(job2, 'graded', resultDoc(job2, { score: 80 }));

    const labs = repoLabs();
    t.ok(labs.length >= 3, `the checkout has its labs with handouts (${labs.map((l) => l.lab).join(', ')})`);

    await t.step('every handout renders its cases table', async () => {
      const page = await newPage(b, { viewport: DESKTOP });
      await signIn(page, s, 'alice');
      for (const { lab, cases } of labs) {
        const r = await page.goto(`${s.url}/labs/${lab}`);
        t.eq(r.status(), 200, `${lab}: the lab page answers 200`);
        // A handout may have more tables (arguments, columns); its cases
        // table is the one whose first column header is "case".
        const tables = await page.$$eval('.handout table', (ts) => ts.map((tb) => ({
          head: [...tb.querySelectorAll('thead th')].map((x) => x.textContent.trim()),
          first: [...tb.querySelectorAll('tbody tr')].map((r) => r.cells[0].textContent.trim().replace(/^`|`$/g, '')),
        })));
        const ct = tables.filter((x) => x.head[0] === 'case');
        t.eq(ct.length, 1, `${lab}: the handout has one real cases <table> (first column "case")`,
          tables.map((x) => x.head.join(' | ')).join(' / '));
        t.eq(ct.length ? ct[0].first.join(',') : '', cases.join(','), `${lab}: one row per case of lab.json, in order`);
        const prose = await page.$$eval('.handout p, .handout li', (els) => els.map((e) => e.textContent).join('\n'));
        t.ok(!/\|\s*(---|case\s*\|)/.test(prose), `${lab}: no raw Markdown table pipes left in the handout's text`, prose.slice(0, 400));
        t.ok(await page.locator('.handout pre code').count() >= 1, `${lab}: the handout's code renders as code blocks`);
        await save(page, `handout-${lab}`, { element: 'section.handout' });
      }
    });

    // [who, path, name, status (200), a selector the page must have]; who
    // null = signed out. Without the selector the staff result passed with
    // no staff forms on it: axe-core checked a page without what it names.
    const pages = [
      [null, '/login', 'sign in'],
      ['alice', '/labs', 'labs list'],
      ['alice', '/labs/vadd', 'lab (vadd)'],
      ['alice', `/labs/${labs.length ? labs[labs.length - 1].lab : 'vadd'}`, 'lab with a cases table'],
      ['alice', `/submissions/${id}`, 'submission result'],
      ['alice', `/submissions/${id}/source`, 'submission source'],
      ['alice', '/submissions', "student's submissions"],
      ['alice', '/labs/vadd/scoreboard', 'scoreboard'],
      ['alice', '/help', 'help'],
      ['tina', `/submissions/${id}`, 'submission result (staff, with override form)', 200,
        `form[action="/submissions/${id}/override"]`],
      ['tina', '/submissions?lab=vadd', 'all submissions (staff)'],
      ['tina', '/labs/vadd/stats', 'lab stats (staff)'],
      ['tina', '/audit', 'audit log'],
      ['adam', '/admin/users', 'admin users'],
      ['adam', '/admin/labs/vadd/rubric', 'rubric editor'],
      ['adam', '/admin/deadlines', 'deadlines'],
      ['adam', '/admin/queue', 'queue'],
      ['adam', '/admin/exports', 'exports'],
      ['alice', '/labs/no-such-lab', 'an error page (404)', 404],
    ];
    const summary = [];
    const sessions = {};
    for (const [who, p, name, status = 200, must = null] of pages) {
      await t.step(name, async () => {
        for (const vp of [DESKTOP, PHONE]) {
          const key = `${who}:${vp.width}`;
          if (!sessions[key]) {
            sessions[key] = await newPage(b, { viewport: vp });
            if (who) await signIn(sessions[key], s, who);
          }
          const page = sessions[key];
          const r = await page.goto(s.url + p);
          t.eq(r.status(), status, `${name} at ${vp.width} px: ${p} answers ${status}`);
          await page.waitForLoadState('load');
          if (must) t.eq(await page.locator(must).count(), 1, `${name} at ${vp.width} px: the page has ${must}`);
          const vs = await axeSerious(page);
          summary.push(`${name} @${vp.width}: ${vs.length} serious/critical` + (vs.length ? ` (${vs.map((v) => v.id).join(', ')})` : '') +
            (vs.others.length ? `; also ${vs.others.join(', ')}` : ''));
          t.eq(vs.length, 0, `${name} at ${vp.width} px: axe-core finds no serious or critical violation`, describe(vs));
          if (vp === PHONE) {
            const w = await sideways(page);
            t.ok(w.scrollWidth <= w.innerWidth, `${name} at 375 px: the page does not scroll sideways (scrollWidth ${w.scrollWidth} <= ${w.innerWidth})`,
              w.culprits.join('\n'));
            if (p === '/labs/vadd') await save(page, 'mobile-lab');
            if (p === `/submissions/${id}` && who === 'alice') await save(page, 'mobile-result');
          }
        }
      });
    }
    console.log('# axe-core serious/critical violations per page:\n' + summary.map((l) => '#   ' + l).join('\n'));

    await t.step('keyboard: focus is visible and the table boxes take focus', async () => {
      const page = await newPage(b, { viewport: PHONE });
      await signIn(page, s, 'alice');
      await page.goto(`${s.url}/labs/${labs.length ? labs[0].lab : 'vadd'}`);
      const box = page.locator('.handout .scroll[role=region]:has(table)').first();
      t.ok(await box.count() === 1, 'the handout table sits in a scroll box');
      t.eq(await box.getAttribute('tabindex'), '0', 'at 375 px, where it scrolls, the box is a tab stop');
      const fits = await box.evaluate((el) => el.scrollWidth > el.clientWidth && getComputedStyle(el).overflowX === 'auto');
      t.ok(fits, 'at 375 px the table scrolls inside its box (overflow-x: auto, wider than the box)');
      await box.focus();
      const outline = await box.evaluate((el) => { const cs = getComputedStyle(el); return `${cs.outlineStyle} ${cs.outlineWidth}`; });
      t.ok(!/^none/.test(outline) && !/ 0px$/.test(outline), 'a focused scroll box shows an outline', outline);
      await page.keyboard.press('Tab');
      const active = await page.evaluate(() => document.activeElement && document.activeElement.tagName);
      t.ok(active && active !== 'BODY', 'Tab moves focus on from the box', active);
      await page.setViewportSize(DESKTOP);
      await page.goto(`${s.url}/labs`);
      await page.waitForLoadState('load');
      const labsBox = page.locator('.scroll[role=region]:has(table.labs)');
      t.eq(await labsBox.getAttribute('tabindex'), null, 'at 1200 px the labs table fits, so its box is no tab stop (app.js)');
      const nojs = await newPage(b, { viewport: DESKTOP, javaScriptEnabled: false });
      await signIn(nojs, s, 'alice');
      await nojs.goto(`${s.url}/labs`);
      t.eq(await nojs.locator('.scroll[role=region]:has(table.labs)').getAttribute('tabindex'), '0',
        'without JavaScript every box is a tab stop, as served');
    });
  } finally {
    await b.close();
    await s.close();
  }
});
