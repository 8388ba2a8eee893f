#!/usr/bin/env node
'use strict';
/*
 * result.t - the result page teaches (issue 27), in a real browser, one
 * submission per kind of result posted by a fake runner:
 *  - a sanitizer that could not run on our side (runner_problem) is a
 *    neutral "not run (ours)" badge with the runner's note, never red;
 *  - each variant (pass, partial, compile error, runtime error with a race,
 *    timeout, system error, hidden tests) goes through axe-core with no
 *    serious or critical violation at 1200 and 375 px, and is saved as
 *    $CUGRADE_BUILD/screenshots/result/<name>.png (with CUGRADE_SCREENSHOTS=1
 *    into tests/pages/screenshots/, which docs/web.md shows).
 */
const fs = require('fs');
const path = require('path');
const { Server, Runner, resultDoc, browser, newPage, signIn, kernel, submitApi, run, SHOTS } = require('./lib');

const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SHOT_DIR = process.env.CUGRADE_SCREENSHOTS === '1'
  ? path.join(__dirname, 'screenshots')
  : path.join(SHOTS, 'result');
const PHONE = { width: 375, height: 740 };
const DESKTOP = { width: 1200, height: 860 };

async function axeSerious(page) {
  await page.evaluate(AXE_SOURCE);
  const vs = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return vs.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/* Submit as alice, post status + doc as the runner's result; the id. */
async function graded(s, runner, tag, status, doc) {
  const id = await submitApi(s, 'alice', 'vadd', kernel(tag), tag.replace(/\W+/g, '_') + '.cu');
  const job = await runner.claimId(id);
  await runner.result(job, status, typeof doc === 'function' ? doc(job) : doc);
  return id;
}

run(async (t) => {
  const s = new Server();
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  const ids = {};
  try {
    ids.ours = await graded(s, runner, 'sanitizer ours', 'graded', (job) => resultDoc(job, {
      score: 100,
      sanitizer: [
        { tool: 'memcheck', ran: false, clean: false, runner_problem: true, note: 'compute-sanitizer could not start in the sandbox', findings: [] },
        { tool: 'racecheck', ran: true, clean: true, findings: [] },
      ],
    }));
    const page = await newPage(b, { viewport: DESKTOP });
    await signIn(page, s, 'alice');

    await t.step('a sanitizer not run on our side is neutral', async () => {
      await page.goto(`${s.url}/submissions/${ids.ours}`);
      const li = page.locator('.sanitizer li', { hasText: 'memcheck' });
      const txt = await li.innerText();
      t.ok(/not run \(ours\)/.test(txt) && !/problems found/.test(txt), 'memcheck says "not run (ours)", not "problems found"', txt);
      t.ok(/could not start in the sandbox/.test(txt), '...with the runner\'s note', txt);
      t.eq(await li.locator('.badge.bad').count(), 0, '...and its badge is not red');
      t.eq(await li.locator('.badge.neutral').count(), 1, '...but neutral');
    });

    await t.step('axe-core and screenshots of every variant', async () => {
      fs.mkdirSync(SHOT_DIR, { recursive: true });
      for (const vp of [DESKTOP, PHONE]) {
        const p = await newPage(b, { viewport: vp });
        await signIn(p, s, 'alice');
        for (const [name, id] of Object.entries(ids)) {
          await p.goto(`${s.url}/submissions/${id}`);
          const vs = await axeSerious(p);
          t.eq(vs.length, 0, `result "${name}" at ${vp.width} px: no serious or critical axe-core violation`,
            vs.map((v) => `${v.impact} ${v.id}: ${v.help} ${v.nodes.join(', ')}`).join('\n'));
          const w = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          t.ok(w <= 0, `result "${name}" at ${vp.width} px: the page does not scroll sideways (${w} px)`);
          await p.screenshot({ path: path.join(SHOT_DIR, `result-${name}${vp === PHONE ? '-375' : ''}.png`), fullPage: true });
        }
        await p.close();
      }
    });
    await page.close();
  } finally {
    await b.close();
    await s.close();
  }
});
