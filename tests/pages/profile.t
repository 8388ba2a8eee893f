#!/usr/bin/env node
'use strict';
/*
 * profile.t - the result page's "Profile" section (docs/runner.md,
 * "Profiling hints"), in a real browser: a result whose cugrade.profile is
 * the one the runner made from a real Nsight Compute report (fixtures/
 * profile.json: tests/tools/profile_hints on tests/runner/fixtures/ncu/
 * profile_uncoalesced.raw.csv, the uncoalesced embedding kernel on an H100,
 * with its line from ncu's source page, fixtures/ncu/source/)
 * shows its hints with their numbers, the hints' Markdown rendered and its
 * HTML not, and a small metrics table; an "unavailable" profile says it is
 * ours and never changes the grade; a result without one has no section.
 * screenshots/profile-result.png is written to $CUGRADE_BUILD/screenshots/,
 * or with CUGRADE_SCREENSHOTS=1 into tests/pages/screenshots/.
 */
const fs = require('fs');
const path = require('path');
const { Server, Runner, resultDoc, browser, newPage, signIn, kernel, submitApi, run, SHOTS } = require('./lib');

const PROFILE = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'profile.json'), 'utf8'));
const SHOT_DIR = process.env.CUGRADE_SCREENSHOTS === '1' ? path.join(__dirname, 'screenshots') : SHOTS;

/* Submit as alice, grade it with extra cugrade fields, open its page. */
async function graded(s, runner, page, tag, cugrade) {
  const id = await submitApi(s, 'alice', 'vadd', kernel(tag));
  const job = await runner.claimId(id);
  const doc = resultDoc(job, { score: 80 });
  Object.assign(doc.cugrade, cugrade);
  await runner.result(job, 'graded', doc);
  await page.goto(`${s.url}/submissions/${id}`);
  return id;
}

run(async (t) => {
  const s = new Server();
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  try {
    const page = await newPage(b);
    await signIn(page, s, 'alice');

    await t.step('a profile with hints', async () => {
      await graded(s, runner, page, 'profiled', { profile: PROFILE });
      t.ok(await page.isVisible('h2:has-text("Profile")'), 'the result has a Profile section');
      const order = await page.locator('h2').allTextContents();
      const iProf = order.findIndex((x) => /^Profile/.test(x));
      const iStand = order.findIndex((x) => /Your standing/.test(x));
      t.ok(iProf >= 0 && iStand > iProf, 'the profile comes right after the speed and hints, before the standing',
        order.join(' | '));
      const items = await page.locator('ul.profile-hints li').allTextContents();
      t.eq(items.length, PROFILE.hints.length, 'one item per hint', items.join(' | '));
      t.ok(items.some((x) => /32\.0 sectors of 32 bytes where 4\.0 would do/.test(x)),
        'the coalescing hint shows its number and the ideal', items[0]);
      t.ok(items.some((x) => /64 block\(s\) on a GPU with 132 SMs/.test(x)), 'the grid hint shows blocks and SMs');
      t.ok(await page.isVisible('ul.profile-hints code:has-text("row_per_thread")'), 'hint Markdown: the kernel name is code');
      t.ok(await page.isVisible('ul.profile-hints code:has-text("profile_uncoalesced.cu:12")') &&
        items.some((x) => /out\[i \* dim \+ j\] = src\[j\];.*\(8\.0x\)/.test(x)),
        'the coalescing hint names its worst line, its text and numbers', items[0]);
      const cells = await page.locator('table.profile tbody tr').first().locator('td').allTextContents();
      t.eq(cells[0], 'row_per_thread', 'the metrics table names the kernel', cells.join(' | '));
      t.ok(cells[5] === '32.0' && cells[7] === '64', 'sectors per load and blocks in the table', cells.join(' | '));
      t.ok(await page.isVisible('text=it does not change your score'), 'the section says it is feedback only');
      fs.mkdirSync(SHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SHOT_DIR, 'profile-result.png'), fullPage: true });
    });

    await t.step('kernel names and hints are text', async () => {
      const evil = JSON.parse(JSON.stringify(PROFILE));
      evil.kernels.push({ name: '<img src=x onerror=alert(1)>', metrics: { 'gpu__time_duration.sum': 1000 } });
      evil.hints.push({ id: 'x', kernel: 'k', value: 1, text: 'see <script>alert(2)</script> `code`' });
      await graded(s, runner, page, 'evil', { profile: evil });
      t.ok(await page.isVisible('table.profile >> text=<img src=x onerror=alert(1)>'), 'a kernel name is shown as text');
      t.ok(await page.locator('ul.profile-hints script').count() === 0 &&
        await page.isVisible('ul.profile-hints code:has-text("code")'), 'raw HTML in a hint is not rendered, its Markdown is');
      t.ok(page.dialogs.length === 0 && page.errors.length === 0, 'nothing ran', page.dialogs.concat(page.errors).join('\n'));
    });

    await t.step('profiling unavailable', async () => {
      await graded(s, runner, page, 'unavailable', {
        profile: { status: 'unavailable', message: '==ERROR== ERR_NVGPUCTRPERM', seconds: 0.4, kernels: [], hints: [] },
      });
      t.ok(await page.isVisible('text=Profiling was unavailable for this submission (our problem, not yours'),
        'an unavailable profile says it is ours');
      t.ok(await page.isVisible('text=ERR_NVGPUCTRPERM'), 'and why');
      t.ok(!(await page.isVisible('table.profile')), 'with no metrics table');
    });

    await t.step('no profile', async () => {
      await graded(s, runner, page, 'plain', {});
      t.ok(await page.isVisible('#score'), 'the result is shown');
      t.ok(!(await page.isVisible('h2:has-text("Profile")')), 'without a profile there is no Profile section');
    });
    await page.close();
  } finally {
    await b.close();
    await s.close();
  }
});
