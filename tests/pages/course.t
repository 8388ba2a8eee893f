#!/usr/bin/env node
'use strict';
/*
 * course.t - the course tools in a real browser:
 *   - pooled late days: the lab page tells a late student what a submission
 *     will cost ("will use 2 of your 3 remaining late days") before they
 *     submit; the student's late-day page; an admin grants days (audited);
 *   - regrade requests: a student asks from their graded submission (the
 *     reason shown as text, never markup), another student cannot see it,
 *     the TA's inbox lists it (open first, filters), the TA answers with an
 *     override, the student reads the answer;
 *   - similarity: a TA runs the check of a lab, the most similar pair comes
 *     first, and the side-by-side view marks the matching regions.
 * Screenshots at 1200 and 375 px go to $BUILD/screenshots and, with
 * CUGRADE_SCREENSHOTS=1, to the committed tests/pages/screenshots/.
 */
const fs = require('fs');
const path = require('path');
const { Server, Runner, resultDoc, browser, newPage, signIn, kernel, submitApi, run, sleep, ROOT, SHOTS } = require('./lib');

const COMMITTED = path.join(__dirname, 'screenshots');
const DAY = 86400 * 1000;

/* A screenshot at 1200 px (NAME.png) and at 375 px (NAME-375.png) in
 * $BUILD/screenshots, and with CUGRADE_SCREENSHOTS=1 in the committed
 * tests/pages/screenshots/ too. */
async function keep(page, name) {
  const dirs = [SHOTS].concat(process.env.CUGRADE_SCREENSHOTS === '1' ? [COMMITTED] : []);
  const vp = page.viewportSize();
  for (const w of [vp.width, 375]) {
    await page.setViewportSize({ width: w, height: vp.height });
    for (const d of dirs) {
      fs.mkdirSync(d, { recursive: true });
      await page.screenshot({ path: path.join(d, name + (w === 375 ? '-375' : '') + '.png'), fullPage: true });
    }
  }
  await page.setViewportSize(vp);
}

/* 1 when the page does not scroll sideways at 375 px (tables and code
 * scroll in their own boxes). */
async function fitsPhone(page) {
  await page.setViewportSize({ width: 375, height: 800 });
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  await page.setViewportSize({ width: 1200, height: 860 });
  return w <= 375 ? true : w;
}

async function graded(s, runner, who, lab, source, score, filename = 'kernel.cu') {
  const id = await submitApi(s, who, lab, source, filename);
  const job = await runner.claimId(id);
  await runner.result(job, 'graded', resultDoc(job, { score }));
  await s.waitStatus(id, 'graded');
  return id;
}

run(async (t) => {
  const s = new Server({ users: [...Server.DEFAULT_USERS, ['dave', 'student', 'Dave Zed']] });
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  try {
    await t.step('late days: the notice before a late submission, the pool, a grant', async () => {
      let r = await s.api('PUT', '/api/admin/late-days', 'adam', { default_days: 3 });
      t.eq(r.status, 200, 'the admin sets 3 late days per student');
      const due = new Date(Date.now() - 1.25 * DAY).toISOString().replace(/\.\d+Z$/, 'Z');
      r = await s.api('POST', '/api/admin/extensions', 'adam', { user: 'alice', lab: 'vadd', due });
      t.eq(r.status, 200, 'alice\'s own deadline for vadd is 1.25 days ago');
      const page = await newPage(b);
      await signIn(page, s, 'alice');
      await page.goto(s.url + '/labs/vadd');
      const notice = await page.textContent('#late-days');
      t.ok(/will use 2 of your 3 remaining late days/.test(notice),
        'the lab page says the submission will use 2 of the 3 remaining late days', notice);
      t.ok(!(await page.isVisible('text=the late penalty applies.')), 'and not that the penalty applies');
      await page.locator('#late-days').scrollIntoViewIfNeeded();
      await keep(page, '20-late-day-notice');
      await page.fill('#source', kernel('late by the form'));
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      t.ok(/\/submissions\/\d+/.test(page.url()), 'the late submission is accepted', page.url());
      await page.goto(s.url + '/me/late-days');
      const summary = await page.textContent('#late-days');
      t.ok(/1\s+left of\s+3\s+\(2 used\)/.test(summary.replace(/\s+/g, ' ')), 'the late-day page: 1 left of 3 (2 used)', summary);
      t.ok(await page.isVisible('table.lateday-labs >> text=vadd'), 'it lists vadd as the lab that used them');
      await page.close();

      const admin = await newPage(b);
      await signIn(admin, s, 'adam');
      await admin.click('header nav >> text=Late days');
      await admin.fill('#ld-user', 'bob');
      await admin.fill('#ld-days', '2');
      await admin.fill('#ld-reason', 'Hospital stay, week 5');
      await Promise.all([admin.waitForNavigation(), admin.click('form[action="/admin/late-days/grant"] button')]);
      t.ok(await admin.isVisible('text=Saved and recorded in the audit log'), 'the grant is confirmed');
      const bobRow = await admin.locator('#late-days-table tr', { hasText: 'bob' }).first().textContent();
      t.ok(/Bob Zebulon\s*5\s*0\s*5/.test(bobRow), 'bob now has 5 late days (3 + 2)', bobRow);
      await admin.goto(s.url + '/audit');
      t.ok(await admin.isVisible('#audit >> text=late_days_grant'), 'the grant is in the audit log');
      await admin.goto(s.url + '/admin/late-days');
      t.eq(await fitsPhone(admin), true, 'the late-days page fits a 375 px phone');
      await admin.close();
    });

    const ids = {};
    ids.alice = await graded(s, runner, 'alice', 'vadd', kernel('alice regrade'), 60);
    ids.bob = await graded(s, runner, 'bob', 'vadd', kernel('bob regrade'), 55);
    let rid = null;

    await t.step('regrade: the student asks from the submission page', async () => {
      const page = await newPage(b);
      await signIn(page, s, 'alice');
      await page.goto(`${s.url}/submissions/${ids.alice}`);
      const reason = 'The big case failed on a 1e-6 tolerance <img src=x onerror=alert(1)>; my error is 2e-6.';
      await page.fill('#rr-reason', reason);
      await Promise.all([page.waitForNavigation(), page.click('form[action$="/regrade-request"] button')]);
      t.ok((await page.textContent('#regrade')).includes(reason), 'the request shows with the reason as text');
      t.ok(await page.isVisible('#regrade >> text=Your request is open'), 'the page says it is open');
      t.eq(await page.locator('#regrade img').count(), 0, 'the reason\'s markup is escaped (no <img> element)');
      t.eq(page.dialogs.length, 0, 'nothing in the reason ran');
      const mine = await s.api('GET', '/api/regrade-requests', 'alice');
      rid = mine.json.requests[0].id;
      await page.close();
      const bob = await newPage(b);
      await signIn(bob, s, 'bob');
      const resp = await bob.goto(`${s.url}/regrades/${rid}`);
      t.eq(resp.status(), 404, 'another student gets 404 for alice\'s request');
      t.ok(!(await bob.content()).includes('1e-6 tolerance'), 'and none of its text');
      await bob.goto(`${s.url}/submissions/${ids.bob}`);
      await bob.fill('#rr-reason', 'Speed tier: my kernel is within 2x of cuBLAS on my machine.');
      await Promise.all([bob.waitForNavigation(), bob.click('form[action$="/regrade-request"] button')]);
      await bob.close();
    });

    await t.step('regrade: the TA inbox, the answer with an override, the student reads it', async () => {
      const ta = await newPage(b);
      await signIn(ta, s, 'tina');
      t.eq((await ta.textContent('header nav a[href="/regrades"] .count')).trim(), '2', 'the staff menu shows 2 open regrade requests');
      await ta.click('header nav >> text=Regrades');
      const rows = await ta.$$eval('#regrades tbody tr', (r) => r.map((x) => x.textContent));
      t.eq(rows.length, 2, 'the inbox lists both open requests', rows.join('\n'));
      t.ok(rows.every((x) => x.includes('open')), 'all open (the default filter)');
      await keep(ta, '21-regrade-inbox');
      t.eq(await fitsPhone(ta), true, 'the inbox fits a 375 px phone without sideways scrolling');
      await ta.fill('#rr-user', 'bob');
      await Promise.all([ta.waitForNavigation(), ta.click('form.filters button')]);
      const bobRows = await ta.$$eval('#regrades tbody tr', (r) => r.map((x) => x.cells[4].textContent));
      t.ok(bobRows.length === 1 && bobRows[0] === 'bob', 'filtering by student shows only bob\'s', bobRows.join(','));
      await ta.goto(`${s.url}/regrades/${rid}`);
      t.ok((await ta.textContent('#regrade-reason')).includes('1e-6 tolerance'), 'the TA reads the reason');
      await ta.fill('#rr-answer', 'Agreed: the tolerance was too tight. Score set to 90.');
      await ta.check('input[name=action][value=override]');
      await ta.fill('#rr-score', '90');
      await Promise.all([ta.waitForNavigation(), ta.click('form.regrade-form button')]);
      t.ok(await ta.isVisible('text=The answer is saved'), 'the answer is confirmed');
      t.eq((await ta.textContent('header nav a[href="/regrades"] .count')).trim(), '1', 'after the answer the menu shows 1 open request');
      await ta.goto(s.url + '/regrades?status=answered');
      t.eq(await ta.locator('#regrades tbody tr').count(), 1, 'the answered filter shows the answered one');
      await ta.goto(s.url + '/audit');
      t.ok(await ta.isVisible('#audit >> text=regrade_answer'), 'the answer is in the audit log');
      await ta.close();
      const page = await newPage(b);
      await signIn(page, s, 'alice');
      await page.goto(`${s.url}/submissions/${ids.alice}`);
      const sec = await page.textContent('#regrade');
      t.ok(sec.includes('Agreed: the tolerance was too tight') && sec.includes('changed to 90'),
        'the student reads the answer and the new score on the submission page', sec);
      t.ok(await page.isVisible('form[action$="/regrade-request"]'), 'and may ask again');
      await page.close();
    });

    await t.step('similarity: a TA runs the check and reads a pair side by side', async () => {
      const lab = fs.existsSync(path.join(s.labsDir, 'matmul')) ? 'matmul' : 'vadd';
      let srcs;
      if (lab === 'matmul') {
        const naive = fs.readFileSync(path.join(ROOT, 'reference', 'matmul', 'naive.cu'), 'utf8');
        const opt = fs.readFileSync(path.join(ROOT, 'reference', 'matmul', 'optimized.cu'), 'utf8');
        // alice: the naive kernel; bob: the same, renamed; carol: half of it
        // rewritten (a partial match); dave: his own tiled kernel.
        const loop = '    for (int k = 0; k < K; k++)\n        sum += A[(size_t)row * K + k] * B[(size_t)k * N + col];';
        srcs = {
          alice: naive,
          bob: naive.replace(/row/g, 'r').replace(/col/g, 'c2').replace(/sum/g, 'total').replace(/naive/g, 'mine'),
          carol: naive.replace(loop, '    int k = 0;\n    while (k + 1 < K) {\n        sum += A[(size_t)row * K + k] * B[(size_t)k * N + col]'
            + ' + A[(size_t)row * K + k + 1] * B[(size_t)(k + 1) * N + col];\n        k += 2;\n    }\n    if (k < K)\n'
            + '        sum = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], sum);'),
          dave: opt,
        };
      } else {
        srcs = { alice: kernel('a'), bob: kernel('b').replace(/vadd_kernel/g, 'add'), carol: kernel('c'), dave: kernel('d') };
      }
      for (const who of ['alice', 'bob', 'carol', 'dave']) await graded(s, runner, who, lab, srcs[who], 50, `${who}.cu`);
      const st = await newPage(b);
      await signIn(st, s, 'alice');
      const resp = await st.goto(`${s.url}/labs/${lab}/similarity`);
      t.eq(resp.status(), 403, 'a student cannot open the similarity page');
      await st.close();

      const ta = await newPage(b);
      await signIn(ta, s, 'tina');
      await ta.goto(`${s.url}/labs/${lab}`);
      await Promise.all([ta.waitForNavigation(), ta.click('text=Similarity')]);
      t.ok(await ta.isVisible('#sim-none'), 'before a run the page says none has run');
      await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/similarity"] button')]);
      for (let i = 0; i < 100 && !(await ta.isVisible('#sim-run >> text=done')); i++) {
        await sleep(200);
        await ta.reload();
      }
      t.ok(await ta.isVisible('#sim-run >> text=done'), 'the run finishes (status done)', await ta.textContent('main'));
      t.ok(await ta.isVisible('#sim-run >> text=starter excluded'), 'the run says the starter was excluded');
      const first = await ta.$eval('#sim-pairs tbody tr', (r) => r.textContent);
      t.ok(first.includes('alice') && first.includes('bob'), 'the most similar pair is alice and bob', first);
      await keep(ta, '22-similarity');
      t.eq(await fitsPhone(ta), true, 'the similarity page fits a 375 px phone');
      await Promise.all([ta.waitForNavigation(), ta.click('#sim-pairs tbody tr >> nth=0 >> text=side by side')]);
      const a = await ta.locator('#src-a tr.sim-match').count();
      const bb = await ta.locator('#src-b tr.sim-match').count();
      t.ok(a > 3 && bb > 3, `matching lines are marked on both sides (${a} and ${bb})`);
      t.ok(await ta.locator('#sim-regions tbody tr').count() >= 1, 'the regions are listed with their line ranges');
      await keep(ta, '23-similarity-side-by-side');
      t.eq(await fitsPhone(ta), true, 'the side-by-side view fits a 375 px phone (one column, code boxes scroll)');
      await ta.close();
    });
  } finally {
    await b.close();
    await s.close();
  }
});
