#!/usr/bin/env node
'use strict';
/*
 * student.t - a student in a real browser: sign in, read a lab, upload a
 * file and see it queued, watch a result posted by a fake runner appear
 * without reloading, read the history; then the same submit + view with
 * JavaScript turned off. Saves screenshots of the pages it visits.
 */
const { Server, Runner, resultDoc, browser, newPage, signIn, shot, kernel, run, sleep } = require('./lib');
const fs = require('fs');
const os = require('os');
const path = require('path');

run(async (t) => {
  const s = new Server();
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cugrade-upload-'));
  try {
    const page = await newPage(b);

    await t.step('sign in', async () => {
      await page.goto(s.url + '/');
      t.ok(page.url().endsWith('/login'), 'a visitor without a session lands on the sign-in page', page.url());
      await shot(page, '01-login');
      await page.fill('input[name=token]', 'cgs_' + '0'.repeat(64));
      await page.click('form#login button[type=submit]');
      t.ok(await page.isVisible('text=That token is not valid'), 'a wrong token gets a message saying what to check');
      await signIn(page, s, 'alice');
      t.ok(page.url().endsWith('/labs'), 'signing in leads to the labs', page.url());
      t.ok(await page.isVisible('header .who >> text=Alice Quartermaine'), 'the header names the signed-in student');
      const cookies = await page.context().cookies();
      const c = cookies.find((x) => x.name === 'cugrade_session');
      t.ok(c && c.httpOnly && c.sameSite === 'Strict', 'the session cookie is HttpOnly and SameSite=Strict', JSON.stringify(c));
    });

    await t.step('labs page', async () => {
      const row = page.locator('table.labs tr', { hasText: 'vadd' });
      t.ok(await row.count() === 1, 'the labs page lists the vadd lab');
      t.ok(/2099-12-01 23:59 UTC/.test(await row.innerText()), 'the due date is shown in UTC', await row.innerText());
      await shot(page, '02-labs');
    });

    let firstId;
    await t.step('upload a file and see it queued', async () => {
      await page.click('a[href="/labs/vadd"]');
      t.ok(await page.isVisible('.handout h3:has-text("What is graded")'), 'the handout Markdown is rendered (heading)');
      t.ok(await page.isVisible('.handout code:has-text("compute-sanitizer")'), 'the handout renders inline code');
      t.ok(await page.isVisible('text=<script>alert("handout")</script> is shown as text'), 'raw HTML in the handout shows as text');
      t.ok(await page.isVisible('pre >> text=extern "C" void vadd'), 'the student interface is shown');
      await shot(page, '03-lab');
      const f = path.join(tmp, 'kernel.cu');
      fs.writeFileSync(f, kernel('first upload'));
      await page.setInputFiles('input#file', f);
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      const m = page.url().match(/\/submissions\/(\d+)$/);
      t.ok(m, 'submitting redirects to the submission page', page.url());
      firstId = m ? Number(m[1]) : 0;
      t.ok(await page.isVisible('#live .badge[data-status=queued]'), 'the new submission shows as queued');
      t.ok(await page.isVisible('#queue-position'), 'the queue position is shown');
      t.ok(await page.isVisible('text=No GPU runner is connected'), 'with no runner, the page says the job waits and need not be resubmitted');
      t.ok(await page.isVisible('#filename:has-text("kernel.cu")'), 'the file name is shown');
      await shot(page, '04-queued');
      const api = await s.submission(firstId);
      t.ok(api && api.status === 'queued' && api.filename === 'kernel.cu', 'the API agrees: queued, kernel.cu', JSON.stringify(api));
    });

    await t.step('a result from the runner appears without reloading', async () => {
      await page.evaluate(() => { window.__noReload = 'still here'; });
      const job = await runner.claimId(firstId);
      await runner.progress(job, 'compiling');
      await page.waitForSelector('#live .badge[data-status=compiling]', { timeout: 8000 });
      t.ok(true, 'the phase "compiling" appears live');
      // The lab has a hidden case: "1/2" would count it, so the student
      // sees the phase without the count (issue 14; tests/server/hidden.t).
      await runner.progress(job, 'checking', '1/2');
      await page.waitForSelector('#live .badge[data-status=checking]', { timeout: 8000 });
      t.ok(true, 'the phase "checking" appears live');
      t.ok(!(await page.isVisible('#live:has-text("1/2")')), 'without the count that would reveal the hidden case');
      await shot(page, '05-live-progress');
      await runner.result(job, 'graded', resultDoc(job, { score: 88.5, speedup: 1.4, hints: ['Use more threads per block.'],
        sanitizer: [{ tool: 'memcheck', clean: false, findings: [{ file: 'kernel.cu', line: 5, message: 'Invalid __global__ write of size 4', hint: 'Check the bounds test before c[i] =.' }] }] }));
      await page.waitForSelector('#live[data-final="1"]', { timeout: 8000 });
      t.ok(await page.isVisible('#score:has-text("88.5 / 100")'), 'the score appears without reloading');
      t.eq(await page.evaluate(() => window.__noReload), 'still here', 'the page was not reloaded');
      t.ok(await page.isVisible('table.tests >> text=correctness: small'), 'the per-test table is shown');
      t.ok(!(await page.isVisible('text=SECRET-HIDDEN-OUTPUT')), 'a hidden test\'s output is not shown to the student');
      t.ok(await page.isVisible('table.cases >> text=small'), 'the per-case table is shown');
      t.ok(await page.isVisible('.sanitizer >> text=Invalid __global__ write of size 4'), 'a sanitizer finding is shown');
      // The only finding is what to fix first: its hint is shown there, once (result.t).
      t.ok(await page.isVisible('#fix-first >> text=Check the bounds test'), 'its hint is shown (in "What to fix first")');
      t.ok(await page.isVisible('.sanitizer a[href$="/source#L5"]'), 'the finding links to the source line');
      const svg = page.locator('#live svg.chart.bars');
      t.ok(await svg.count() === 1, 'the timing chart is an inline SVG');
      const labels = await svg.locator('text.lbl').allTextContents();
      t.ok(labels.includes('your kernel') && labels.includes('cuBLAS') && labels.includes('naive') && labels.includes('optimized'),
        'the chart shows the student next to the references and cuBLAS', labels.join(', '));
      t.ok(page.errors.length === 0, 'no script errors on the page', page.errors.join('\n'));
      t.ok(page.cspViolations.length === 0, 'no Content-Security-Policy violations', page.cspViolations.join('\n'));
      await shot(page, '06-result');
    });

    await t.step('the source view has line numbers', async () => {
      await page.click('text=View source');
      t.ok(await page.isVisible('table.src td#L5'), 'the source has line anchors');
      t.ok(await page.isVisible('table.src tr.mark td#L5'), 'the line with a sanitizer finding is highlighted');
    });

    await t.step('history', async () => {
      // the click navigates: wait for the new page (isVisible does not wait;
      // once, under load, it looked before the history had loaded)
      await Promise.all([page.waitForNavigation(), page.click('header nav >> text=My submissions')]);
      t.ok(await page.isVisible(`table.subs a[href="/submissions/${firstId}"]`), 'the history lists the submission');
      t.ok(await page.isVisible('table.subs >> text=88.5 / 100'), 'with its score');
      await page.goto(s.url + '/labs');
      t.ok(/88\.5 \/ 100/.test(await page.locator('table.labs tr', { hasText: 'vadd' }).innerText()), 'the labs page shows the best score');
    });

    await t.step('paste box', async () => {
      await page.goto(s.url + '/labs/vadd');
      await page.fill('textarea#source', kernel('pasted'));
      await page.fill('input#filename', 'pasted.cu');
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      t.ok(/\/submissions\/\d+$/.test(page.url()), 'pasted source is submitted', page.url());
      t.ok(await page.isVisible('#filename:has-text("pasted.cu")'), 'under the chosen file name');
      await page.goto(s.url + '/labs/vadd');
      // pasted.cu is still queued: the form asks before replacing it (lab.t).
      t.ok(await page.isVisible('#replace-note'), 'the form says pasted.cu is still queued');
      await page.check('#replace');
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      t.ok(await page.isVisible('#problem:has-text("Nothing was sent")'), 'an empty submit says what to do');
    });

    await t.step('sign out', async () => {
      await Promise.all([page.waitForNavigation(), page.click('header form[action="/logout"] button')]);
      t.ok(await page.isVisible('text=You are signed out'), 'signing out says so');
      await page.goto(s.url + '/labs');
      t.ok(page.url().endsWith('/login'), 'after signing out the labs page needs a sign-in again', page.url());
    });

    await t.step('submit and view work without JavaScript', async () => {
      const np = await newPage(b, { javaScriptEnabled: false });
      await signIn(np, s, 'bob');
      await np.goto(s.url + '/labs/vadd');
      const f = path.join(tmp, 'nojs.cu');
      fs.writeFileSync(f, kernel('no js'));
      await np.setInputFiles('input#file', f);
      await Promise.all([np.waitForNavigation(), np.click('#submit-form button[type=submit]')]);
      const m = np.url().match(/\/submissions\/(\d+)$/);
      t.ok(m, 'without JavaScript the form posts and redirects to the submission page', np.url());
      const id = m ? Number(m[1]) : 0;
      t.ok(await np.isVisible('#live .badge[data-status=queued]'), 'without JavaScript the submission shows as queued');
      const refresh = await np.locator('noscript').first().innerHTML().catch(() => '');
      t.ok(/http-equiv="refresh"/.test(await np.content()), 'the page carries a meta refresh for browsers without JavaScript', refresh);
      const job = await runner.claimId(id);
      await runner.result(job, 'graded', resultDoc(job, { score: 61 }));
      // The meta refresh (3 s) reloads the page by itself.
      await np.waitForSelector('#score:has-text("61 / 100")', { timeout: 10000 });
      t.ok(true, 'without JavaScript the result appears after the automatic reload');
      await np.close();
    });
    await page.close();
  } finally {
    await b.close();
    await s.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
