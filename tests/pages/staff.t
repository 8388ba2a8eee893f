#!/usr/bin/env node
'use strict';
/*
 * staff.t - the scoreboard as students and staff see it, and the TA and
 * admin pages in a real browser: scoreboard ordering (by score, by speedup,
 * client-side and without JS), pseudonyms and the opt-in to a real name; a TA
 * lists submissions with filters, reads a source, overrides a score (seen in
 * the scoreboard and the audit log) and looks at the charts; an admin edits
 * the rubric (validated, diffed, applied as a new version), imports a
 * roster, gives an extension, looks at the queue and exports grades.
 */
const fs = require('fs');
const path = require('path');
const { Server, Runner, resultDoc, browser, newPage, signIn, kernel, submitApi, run, SHOTS } = require('./lib');

/* Screenshots at 1200 and 375 px: $CUGRADE_BUILD/screenshots/staff/, or
 * with CUGRADE_SCREENSHOTS=1 the committed ones in tests/pages/screenshots/. */
const SHOT_DIR = process.env.CUGRADE_SCREENSHOTS === '1' ? path.join(__dirname, 'screenshots') : path.join(SHOTS, 'staff');

/* The page now at 1200 px as NAME.png and at 375 px as NAME-375.png, and
 * a check that it does not scroll sideways there (tables scroll in their
 * own boxes). */
async function keep(t, page, name) {
  fs.mkdirSync(SHOT_DIR, { recursive: true });
  const vp = page.viewportSize();
  await page.screenshot({ path: path.join(SHOT_DIR, name + '.png'), fullPage: true });
  await page.setViewportSize({ width: 375, height: 740 });
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  t.ok(over <= 0, `${name} at 375 px: the page does not scroll sideways (${over} px)`);
  await page.screenshot({ path: path.join(SHOT_DIR, name + '-375.png'), fullPage: true });
  await page.setViewportSize(vp);
}

/* The text of column col (0-based) of each body row of #scoreboard. */
async function column(page, col) {
  return page.$$eval('#scoreboard tbody tr', (rows, c) => rows.map((r) => r.cells[c].textContent.trim()), col);
}

run(async (t) => {
  const s = new Server();
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  const ids = {};
  try {
    // alice: 70 points, speedup 1.1; bob: 90, 0.8; carol: 50, 2.5 (and an
    // older, worse try from bob that must not count).
    const plan = [['bob', 40, 0.5], ['alice', 70, 1.1], ['bob', 90, 0.8], ['carol', 50, 2.5]];
    for (const [who, score, speedup] of plan) {
      const id = await submitApi(s, who, 'vadd', kernel(`${who} ${score}`), `${who}.cu`);
      const job = await runner.claimId(id);
      await runner.progress(job, 'timing');
      await runner.result(job, 'graded', resultDoc(job, { score, speedup }));
      ids[who] = id;
    }

    await t.step('student scoreboard: pseudonyms, ordering, opt-in', async () => {
      const page = await newPage(b);
      await signIn(page, s, 'carol');
      await page.goto(s.url + '/labs/vadd/scoreboard');
      const scores = await column(page, 2);
      t.eq(scores.map((x) => x.split(' ')[0]).join(','), '90,70,50', 'ranked by best score, one row per student', scores.join(' | '));
      const names = (await column(page, 1)).join(' | ');
      t.ok(!names.includes('Bob Zebulon') && !names.includes('Alice Quartermaine') && !names.includes('bob'),
        'other students appear under pseudonyms', names);
      t.ok(await page.isVisible('#scoreboard tr.me'), 'the student\'s own row is marked');
      await page.click('#scoreboard th:has-text("Speedup")');
      t.eq((await column(page, 3)).join(','), '2.50×,1.10×,0.80×', 'clicking the Speedup header sorts by speedup (JS)');
      await page.click('#scoreboard th:has-text("Score")');
      t.eq((await column(page, 2)).map((x) => x.split(' ')[0]).join(','), '90,70,50', 'clicking the Score header sorts by score again');
      await keep(t, page, '07-scoreboard');
      await page.click('#show-name');
      await page.waitForSelector('#scoreboard tr.me:has-text("Carol Young")');
      t.ok(true, 'after opting in, the student\'s real name shows on the scoreboard');
      const other = await newPage(b, { javaScriptEnabled: false });
      await signIn(other, s, 'alice');
      await other.goto(s.url + '/labs/vadd/scoreboard?sort=speedup');
      t.eq((await column(other, 3)).join(','), '2.50×,1.10×,0.80×', 'sorted by speedup without JavaScript (?sort=speedup)');
      t.ok((await column(other, 1)).join(' ').includes('Carol Young'), 'other students now see the opted-in name');
      t.ok(!(await column(other, 1)).join(' ').includes('Bob Zebulon'), 'but still not the names of students who did not opt in');
      await other.close();
      await page.close();
    });

    const ta = await newPage(b);
    await signIn(ta, s, 'tina');

    await t.step('TA: all submissions with filters, source with line numbers', async () => {
      await ta.click('header nav >> text=Submissions');
      t.ok(await ta.locator('table.subs tbody tr').count() >= 4, 'the TA sees everyone\'s submissions');
      await ta.selectOption('select[name=lab]', 'vadd');
      await ta.fill('input[name=user]', 'bob');
      await Promise.all([ta.waitForNavigation(), ta.click('form.filters button')]);
      const users = await ta.$$eval('table.subs tbody tr', (rows) => rows.map((r) => r.cells[2].textContent));
      t.ok(users.length === 2 && users.every((u) => u === 'bob'), 'filtering by student shows only theirs', users.join(','));
      await ta.goto(s.url + '/submissions?lab=vadd');
      await keep(t, ta, '08-ta-submissions');
      await ta.goto(`${s.url}/submissions/${ids.alice}/source`);
      t.ok(await ta.isVisible('table.src td#L2'), 'the TA reads any source with line numbers');
      t.ok((await ta.textContent('table.src')).includes('alice 70'), 'it is alice\'s source');
    });

    await t.step('staff nav: a link to every page the role may open', async () => {
      const want = { tina: ['/labs', '/submissions', '/regrades', '/audit', '/admin/queue', '/admin/late-days'],
        adam: ['/labs', '/submissions', '/regrades', '/audit', '/admin/users', '/admin/deadlines', '/admin/queue', '/admin/late-days', '/admin/exports'] };
      for (const who of ['tina', 'adam']) {
        const p = await newPage(b);
        await signIn(p, s, who);
        const hrefs = await p.$$eval('header nav a', (as) => as.map((a) => a.getAttribute('href')));
        const missing = want[who].filter((h) => !hrefs.includes(h));
        t.eq(missing.join(' '), '', `${who}: the menu links each page of the role`, hrefs.join(' '));
        const bad = [];
        for (const h of hrefs) {
          const r = await p.goto(s.url + h);
          if (r.status() !== 200) bad.push(`${h} ${r.status()}`);
        }
        t.eq(bad.join(', '), '', `${who}: every link of the menu opens (200)`);
        await p.close();
      }
    });

    await t.step('TA: an override form with an error keeps what was typed', async () => {
      await ta.goto(`${s.url}/submissions/${ids.alice}`);
      await ta.fill('#ov-score', '88');
      await ta.fill('#ov-reason', '');
      await ta.evaluate(() => { for (const f of document.forms) f.noValidate = true; });
      await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/override"] button')]);
      t.ok(await ta.isVisible('#override-problem'), 'an override without a reason is refused with a message');
      t.eq(await ta.inputValue('#ov-score'), '88', '...and the typed score is still in the form');
    });

    await t.step('TA: override shows in the scoreboard and in the audit log', async () => {
      await ta.goto(`${s.url}/submissions/${ids.alice}`);
      await ta.fill('#ov-score', '95');
      await ta.fill('#ov-reason', 'Regrade request: the big case tolerance was too tight.');
      await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/override"] button')]);
      t.ok(await ta.isVisible('text=The override is saved'), 'the override is confirmed');
      t.ok(await ta.isVisible('table.overrides >> text=Regrade request'), 'the submission page lists the override with its reason');
      const line = await ta.locator('#live p', { hasText: 'Status:' }).innerText();
      t.ok(/95 \/ 100/.test(line) && /overridden/.test(line) && /graded 70 \/ 100/.test(line),
        'the score line says the 95 is an override of the graded 70 (the tests below add up to 70)', line);
      await keep(t, ta, '13-ta-result-override');
      await ta.goto(s.url + '/labs/vadd/scoreboard');
      const rows = await ta.$$eval('#scoreboard tbody tr', (r) => r.map((x) => x.textContent));
      t.ok(rows[0].includes('alice') && rows[0].includes('95 / 100'), 'the overridden score moves alice to the top of the scoreboard', rows.join('\n'));
      t.ok(rows[0].includes('override: Regrade request'), 'the scoreboard marks the override and its reason for staff');
      t.ok(rows.join(' ').includes('Alice Quartermaine') && rows.join(' ').includes('Bob Zebulon'), 'staff see real names');
      await ta.goto(s.url + '/audit');
      const audit = await ta.locator('#audit tbody tr', { hasText: 'override' }).first().textContent();
      t.ok(audit.includes('tina') && audit.includes('Regrade request'), 'the audit log records who overrode and why', audit);
      await keep(t, ta, '09-override-audit');
      const api = await s.submission(ids.alice);
      t.eq(api && api.score, 95, 'the API reports the overridden score');
    });

    await t.step('TA: charts', async () => {
      await ta.goto(s.url + '/labs/vadd/stats');
      t.eq(await ta.locator('svg.chart.hist').count(), 2, 'two SVG histograms: scores and speedups');
      const title = await ta.locator('svg.chart.hist title').first().textContent();
      t.ok(title.includes('(3 values)'), 'the score histogram counts each student once', title);
      await keep(t, ta, '10-charts');
    });

    await t.step('TA: regrade a submission', async () => {
      await ta.goto(`${s.url}/submissions/${ids.alice}`);
      await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/regrade"] button')]);
      const api = await s.submission(ids.alice);
      t.ok(api && api.status === 'queued', 'a TA regrade puts the submission back in the queue', JSON.stringify(api && api.status));
      await ta.goto(s.url + '/audit');
      const audit = await ta.locator('#audit tbody tr', { hasText: 'regrade' }).first().textContent();
      t.ok(audit.includes('tina'), 'the audit log records the TA\'s regrade', audit);
    });

    const admin = await newPage(b);
    await signIn(admin, s, 'adam');

    await t.step('admin: rubric edit creates a new version', async () => {
      await admin.goto(s.url + '/admin/labs/vadd/rubric');
      t.eq(await admin.textContent('#rubric-version'), '1', 'the editor starts at version 1');
      const text = await admin.inputValue('textarea#rubric');
      await admin.fill('textarea#rubric', text.replace('{', '{ "oops": ,'));
      await Promise.all([admin.waitForNavigation(), admin.click('button[value=preview]')]);
      t.ok(await admin.isVisible('#problem:has-text("not valid JSON")'), 'broken JSON is refused with the line and column');
      await admin.fill('textarea#rubric', text.replace('"points": 10', '"points": -3'));
      await Promise.all([admin.waitForNavigation(), admin.click('button[value=preview]')]);
      const problem = await admin.textContent('#problem').catch(() => '');
      t.ok(/points/.test(problem) && /Nothing changed/.test(problem), 'an invalid rubric is refused naming the field', problem);
      await admin.fill('textarea#rubric', text.replace('"points": 10', '"points": 15'));
      await Promise.all([admin.waitForNavigation(), admin.click('button[value=preview]')]);
      const adds = await admin.locator('#diff .add').allTextContents();
      const dels = await admin.locator('#diff .del').allTextContents();
      t.ok(adds.some((x) => x.includes('"points": 15')) && dels.some((x) => x.includes('"points": 10')),
        'the preview shows what changes as a diff', adds.concat(dels).join('\n'));
      t.eq(await admin.textContent('#rubric-version'), '1', 'previewing stores nothing');
      await keep(t, admin, '11-admin-rubric-editor');
      await admin.check('input[name=regrade]');
      await Promise.all([admin.waitForNavigation(), admin.click('#apply')]);
      t.ok(await admin.isVisible('text=Saved as version 2'), 'applying saves version 2');
      t.eq(await admin.textContent('#rubric-version'), '2', 'the editor now shows version 2');
      t.ok(await admin.isVisible('#versions td:has-text("adam")'), 'the versions table names who made it');
      const api = await s.api('GET', '/api/admin/labs/vadd/rubric', 'admin');
      t.ok(api.json && api.json.version === 2 && api.json.rubric.correctness[0].points === 15, 'the API serves version 2 with the change', api.text.slice(0, 200));
      const requeued = await s.submission(ids.carol);
      t.ok(requeued && requeued.status === 'queued', 'the regrade option put affected submissions back in the queue', JSON.stringify(requeued && requeued.status));
      const audit = await s.api('GET', '/api/submissions?lab=vadd&status=queued', 'admin');
      t.ok(audit.json && audit.json.submissions.length >= 3, 'one job per student\'s best/latest submission', audit.text.slice(0, 200));
    });

    await t.step('admin: queue and runners', async () => {
      await admin.click('header nav >> text=Queue');
      t.ok(await admin.isVisible('#runners >> text=fake-gpu0'), 'the runner is listed');
      t.ok(/Queued jobs: \d+/.test(await admin.textContent('#queue-depth')), 'the queue depth is shown');
      t.ok(await admin.locator('#jobs tbody tr').count() >= 3, 'queued jobs are listed');
      t.ok(await admin.isVisible('h2:has-text("Queued, running and failed jobs")'),
        'the jobs are headed as what they are (queued, running, failed), not as "needing attention"');
      await keep(t, admin, '12-admin-queue');
      // Grade the regraded jobs so the exports below have full results.
      for (let job = await runner.claim(0); job; job = await runner.claim(0)) {
        const who = Object.keys(ids).find((k) => ids[k] === job.id);
        const score = { alice: 70, bob: 90, carol: 50 }[who] || 40;
        await runner.result(job, 'graded', resultDoc(job, { score, speedup: { alice: 1.1, bob: 0.8, carol: 2.5 }[who] || 0.5 }));
      }
    });

    await t.step('admin: roster import, extensions, exports', async () => {
      await admin.click('header nav >> text=Users');
      await admin.fill('textarea#roster', 'name,role,display_name\nada,student,Ada Lovelace\ngrace,ta,Grace Hopper\n');
      await Promise.all([admin.waitForNavigation(), admin.click('form:has(textarea#roster) button')]);
      const toks = await admin.locator('#new-tokens tbody tr').allTextContents();
      t.ok(toks.length === 2 && /cgs_[0-9a-f]{64}/.test(toks[0]) && /cgt_[0-9a-f]{64}/.test(toks[1]), 'the roster import shows each new token once', toks.join('\n'));
      const [dl] = await Promise.all([admin.waitForEvent('download'), admin.click('#tokens-csv')]);
      const dlText = require('fs').readFileSync(await dl.path(), 'utf8');
      t.ok(/^tokens-\d{4}-\d\d-\d\d\.csv$/.test(dl.suggestedFilename()) && /^name,role,token\r\nada,student,cgs_[0-9a-f]{64}\r\ngrace,ta,cgt_/.test(dlText),
        'the new tokens download as tokens-<date>.csv', dl.suggestedFilename() + '\n' + dlText);
      await Promise.all([admin.waitForNavigation(), admin.click('form[action="/admin/users/ada/token"] button')]);
      t.ok(await admin.isVisible('#done:has-text("A new token for ada")') && /cgs_[0-9a-f]{64}/.test(await admin.textContent('#new-tokens')),
        'New token on ada\'s row shows her new token once');
      await admin.fill('textarea#roster', 'name,role,display_name\nada,student,Ada King\nalice,ta\n');
      await Promise.all([admin.waitForNavigation(), admin.click('form:has(textarea#roster) button')]);
      const report = await admin.locator('#import-report tbody tr').allTextContents();
      t.ok(report.length === 2 && /ada.*updated/.test(report[0]) && /alice.*student.*unchanged/.test(report[1]),
        'the roster imported again reports each row: updated, unchanged (role kept)', report.join('\n'));
      await keep(t, admin, '24-admin-users-import-again');
      await admin.fill('textarea#roster', 'name,role\nbad,professor\n');
      await Promise.all([admin.waitForNavigation(), admin.click('form:has(textarea#roster) button')]);
      t.ok(await admin.isVisible('.notice.bad'), 'a bad roster line is refused with a message');
      await admin.setInputFiles('input#roster-file', { name: 'roster.csv', mimeType: 'text/csv', buffer: Buffer.from('linus,student,Linus T\n') });
      await Promise.all([admin.waitForNavigation(), admin.click('form:has(textarea#roster) button')]);
      t.ok(/linus/.test(await admin.textContent('#new-tokens').catch(() => '')), 'a roster CSV file can be uploaded too');
      await admin.goto(s.url + '/admin/deadlines');
      const before = (await s.api('GET', '/api/admin/labs/vadd/rubric', 'admin')).json.version;
      const row = admin.locator('form[action="/admin/labs/vadd/deadline"]');
      await row.locator('input[name=due]').fill('2099-11-30T18:00');
      await Promise.all([admin.waitForNavigation(), row.locator('button').click()]);
      t.ok(await admin.isVisible('text=Deadlines of vadd saved'), 'a lab deadline change is confirmed');
      const after = await s.api('GET', '/api/admin/labs/vadd/rubric', 'admin');
      t.ok(after.json.version === before + 1 && after.json.rubric.due === '2099-11-30T18:00:00Z',
        'a deadline change is stored as a new rubric version', after.text.slice(0, 200));
      await admin.fill('form[action="/admin/extensions"] input[name=user]', 'alice');
      await admin.selectOption('form[action="/admin/extensions"] select[name=lab]', 'vadd');
      await admin.fill('form[action="/admin/extensions"] input[name=due]', '2100-01-05T12:00');
      await Promise.all([admin.waitForNavigation(), admin.click('form[action="/admin/extensions"] button')]);
      t.ok(await admin.isVisible('#extensions tr:has-text("alice") >> text=2100-01-05 12:00 UTC'), 'an extension is recorded and listed');
      await keep(t, admin, '14-admin-deadlines');
      await admin.goto(s.url + '/admin/exports');
      await keep(t, admin, '15-admin-exports');
      const csv = await admin.request.get(s.url + '/admin/export/grades.csv');
      const body = await csv.text();
      t.ok(csv.status() === 200 && /^user,display_name,lab,score/.test(body) && /alice,.*vadd,95/.test(body),
        'the grades CSV has the overridden score', body.slice(0, 300));
      const lms = await admin.request.get(s.url + '/admin/export/grades-lms.csv');
      const lmsBody = await lms.text();
      t.ok(lms.status() === 200 && /filename="grades-lms-\d{4}-\d\d-\d\d\.csv"/.test(lms.headers()['content-disposition'])
        && /^user,display_name,[^\r]*vadd/.test(lmsBody) && /\r\nalice,[^\r]*,95/.test(lmsBody) && /\r\nada,Ada King,/.test(lmsBody),
        'the LMS CSV: a dated file, a row per student, also ada who never submitted', lmsBody.slice(0, 300));
      const gs = await admin.request.get(s.url + '/admin/export/results.json?lab=vadd');
      const doc = await gs.json();
      const a = doc.students.find((x) => x.user === 'alice');
      t.ok(a && a.results.score === 95 && Array.isArray(a.results.tests), 'the Gradescope-style export has results.json per student', JSON.stringify(a).slice(0, 300));
    });
    await ta.close();
    await admin.close();
  } finally {
    await b.close();
    await s.close();
  }
});
