#!/usr/bin/env node
'use strict';
/*
 * result.t - the result page teaches (issue 27), in a real browser, one
 * submission per kind of result posted by a fake runner:
 *  - a sanitizer that could not run on our side (runner_problem) is a
 *    neutral "not run (ours)" badge with the runner's note, never red;
 *  - a box "What to fix first" leads: the first failing case, its message
 *    (once on the page), the hint (once), a link to the line; a compile
 *    error's first error; a race found 7 times on one line is one line
 *    with its hint once and no raw addresses;
 *  - outcomes: partial credit is "partial", a compile error's not-run tests
 *    are one neutral row, hidden tests are one placeholder row so the rows
 *    add up to the score, a system error shows no "0 / 0" and no host path;
 *  - the speed chart is on a log scale, without cuBLAS where there is none,
 *    with "x times faster/slower than" each reference and the next tier;
 *  - the student's rank and latest submissions to the lab, this one marked;
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
const SLOW = 'Your program ran past its time limit of 12.0 s while case small was running: look for a loop that never ends or a kernel launched far more often than needed.';
const CRASH = 'Your program was killed by signal 6 (Aborted): CUDA error: an illegal memory access was encountered.';
const RACE_HINT = 'A shared-memory race: put __syncthreads() between the write and the read.';

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
  // A system error is retried (max_attempts 3) before it is final.
  for (let k = 0; k < (status === 'system_error' ? 3 : 1); k++) {
    const job = await runner.claimId(id);
    await runner.result(job, status, typeof doc === 'function' ? doc(job) : doc);
  }
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
    // A partial score with a failing case (its message and hint), a race on
    // one line found 7 times with raw addresses, and a lab without cuBLAS.
    ids.partial = await graded(s, runner, 'partial', 'graded', (job) => {
      const d = resultDoc(job, {
        score: 52,
        cases: [
          { name: 'small', passed: false, max_abs_err: 0.5, max_rel_err: 0.25, first_bad_index: 999, unwritten: 0, message: 'c[999] = 0 but expected 1.25' },
          { name: 'big', passed: true, max_abs_err: 0, max_rel_err: 0, first_bad_index: null, unwritten: 0, message: '' },
        ],
        sanitizer: [{ tool: 'racecheck', clean: false, findings: Array.from({ length: 7 }, (_, k) => ({
          file: 'kernel.cu', line: 5, message: `Race reported between Write access at 0x7f3a${k}c20 and Read access at 0x7f3a${k}d40`,
          hint: 'A shared-memory race: put __syncthreads() between the write and the read.' })) }],
        hints: ['Check the bounds of your last block.'],
      });
      d.tests = [
        { name: 'correctness: small', score: 0, max_score: 10, status: 'failed', output: 'wrong; max abs err 0.5; first bad index 999; c[999] = 0 but expected 1.25 Hint: Check the bounds of your last block.', visibility: 'visible' },
        { name: 'hidden: big', score: 30, max_score: 30, status: 'passed', output: 'SECRET-HIDDEN-OUTPUT', visibility: 'hidden' },
        { name: 'sanitizer (memcheck, racecheck)', score: 0, max_score: 10, status: 'failed', output: 'racecheck: errors found', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 22, max_score: 50, status: 'passed', output: 'ratio 3.1: within 4x of cuBLAS', visibility: 'visible' },
      ];
      d.max_score = 100;
      d.cugrade.hint_details = [{ id: 'bounds', case: 'small', text: 'Check the bounds of your last block.' }];
      d.cugrade.timing = { student_ms: 0.4, reference_ms: { naive: 9.1 }, cublas_ms: null, cpu_ms: 106, speedup: 22.75,
        samples: 41, rel_err: 0.004, flagged: false };
      d.cugrade.speed = [{ name: 'speed vs cuBLAS', metric: 'ratio_to_cublas', value: 3.1, tier: 'within 4x of cuBLAS', points: 25, max_points: 50 }];
      return d;
    });
    ids.compile = await graded(s, runner, 'compile error', 'compile_error', (job) => {
      const d = resultDoc(job, { score: 0, status: 'compile_error', compile_log: 'kernel.cu(3): error: identifier "x" is undefined\nkernel.cu(9): error: expected a ";"\n2 errors detected.' });
      d.tests = [
        { name: 'correctness: small', score: 0, max_score: 10, status: 'failed', output: 'not run: compile_error', visibility: 'visible' },
        { name: 'sanitizer (memcheck, racecheck)', score: 0, max_score: 10, status: 'failed', output: 'not run', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 0, max_score: 50, status: 'failed', output: 'not timed', visibility: 'visible' },
      ];
      d.cugrade.cases = [];
      d.cugrade.sanitizer = [];
      return d;
    });
    ids.system = await graded(s, runner, 'system error', 'system_error', (job) => {
      const d = resultDoc(job, { score: 0, output: 'runner: /var/lib/cugrade-runner/work/job-17/harness: No such file or directory' });
      d.max_score = 0;
      d.tests = [];
      return d;
    });
    ids.pass = await graded(s, runner, 'full pass', 'graded', (job) => {
      const d = resultDoc(job, { score: 100 });
      d.tests = [
        { name: 'correctness: small', score: 10, max_score: 10, status: 'passed', output: 'correct; max abs err 0, max rel err 0', visibility: 'visible' },
        { name: 'correctness: big', score: 30, max_score: 30, status: 'passed', output: 'SECRET-HIDDEN-OUTPUT', visibility: 'hidden' },
        { name: 'sanitizer (memcheck, racecheck)', score: 10, max_score: 10, status: 'passed', output: 'memcheck: clean; racecheck: clean', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 50, max_score: 50, status: 'passed', output: 'ratio_to_cublas = 1.37: within 2x of cuBLAS', visibility: 'visible' },
      ];
      d.cugrade.speed = [{ name: 'speed vs cuBLAS', metric: 'ratio_to_cublas', value: 1.37, tier: 'within 2x of cuBLAS', points: 50, max_points: 50 }];
      return d;
    });
    // The file crashed on the hidden case after a wrong small case, and
    // racecheck saw one race 12 times on two lines of the kernel.
    ids.race = await graded(s, runner, 'runtime error with a race', 'runtime_error', (job) => {
      const race = (line, k) => ({ file: 'kernel.cu', line, hint: RACE_HINT,
        message: `Race reported between Write access at 0x7f3a${k}c20 in vadd_kernel and Read access at 0x7f3a${k}d40 in vadd_kernel [32 hazards]` });
      const d = resultDoc(job, {
        score: 0, status: 'runtime_error',
        output: `${CRASH} 0 of 2 correctness cases passed.`,
        cases: [
          { name: 'small', passed: false, max_abs_err: 2.25, max_rel_err: 0.47, first_bad_index: 1024, unwritten: 0, message: 'c[1024] = 2.5 but expected 4.75' },
          { name: 'big', passed: false, max_abs_err: null, max_rel_err: null, first_bad_index: null, unwritten: null, message: `not run: ${CRASH}` },
        ],
        sanitizer: [
          { tool: 'memcheck', ran: true, clean: false, findings: [{ file: 'kernel.cu', line: 14,
            message: 'Invalid __global__ write of size 4 bytes at 0x7f3a00c400 is out of bounds', hint: 'A write past the end of an array: check the index against n before you write.' }] },
          { tool: 'racecheck', ran: true, clean: false, findings: [...Array.from({ length: 8 }, (_, k) => race(9, k)), ...Array.from({ length: 4 }, (_, k) => race(11, k))] },
        ],
      });
      d.tests = [
        { name: 'correctness: small', score: 0, max_score: 10, status: 'failed', output: 'wrong; max abs err 2.25, max rel err 0.47; first bad index 1024; c[1024] = 2.5 but expected 4.75', visibility: 'visible' },
        { name: 'correctness: big', score: 0, max_score: 30, status: 'failed', output: `not run: ${CRASH}`, visibility: 'hidden' },
        { name: 'sanitizer (memcheck, racecheck)', score: 0, max_score: 10, status: 'failed',
          output: 'memcheck: errors found; kernel.cu:14 Invalid __global__ write of size 4 bytes; racecheck: errors found; kernel.cu:9 Race reported between Write access and Read access', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 0, max_score: 50, status: 'failed', output: 'not timed', visibility: 'visible' },
      ];
      d.cugrade.status = 'runtime_error';
      return d;
    });
    // A loop that never ends: the check run was killed, the sanitizers
    // were cancelled, nothing was timed.
    ids.timeout = await graded(s, runner, 'timeout', 'timeout', (job) => {
      const d = resultDoc(job, {
        score: 0, status: 'timeout',
        output: `${SLOW} 0 of 2 correctness cases passed.`,
        cases: ['small', 'big'].map((name) => ({ name, passed: false, max_abs_err: null, max_rel_err: null,
          first_bad_index: null, unwritten: null, message: `not run: ${SLOW}` })),
        sanitizer: [],
      });
      d.tests = [
        { name: 'correctness: small', score: 0, max_score: 10, status: 'failed', output: `not run: ${SLOW}`, visibility: 'visible' },
        { name: 'correctness: big', score: 0, max_score: 30, status: 'failed', output: `not run: ${SLOW}`, visibility: 'hidden' },
        { name: 'sanitizer (memcheck, racecheck)', score: 0, max_score: 10, status: 'failed', output: 'not run', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 0, max_score: 50, status: 'failed', output: 'not timed', visibility: 'visible' },
      ];
      d.cugrade.status = 'timeout';
      return d;
    });
    await s.waitStatus(ids.system, 'system_error');
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

    await t.step('what to fix first leads, each message once', async () => {
      await page.goto(`${s.url}/submissions/${ids.partial}`);
      const box = page.locator('#fix-first');
      t.ok(await box.isVisible(), 'a result with a failing case has a "What to fix first" box');
      const order = await page.evaluate(() => {
        const y = (sel) => { const e = document.querySelector(sel); return e ? e.getBoundingClientRect().top : -1; };
        return { box: y('#fix-first'), tests: y('table.tests') };
      });
      t.ok(order.box >= 0 && order.box < order.tests, 'the box comes before the tests table', JSON.stringify(order));
      const bt = await box.innerText();
      t.ok(/small/.test(bt) && /c\[999\] = 0 but expected 1\.25/.test(bt), 'it names the first failing case and its message', bt);
      t.ok(/Hint:\s*Check the bounds of your last block/.test(bt), 'with its hint', bt);
      t.ok(await box.locator('a[href$="/source#L5"]').count() === 1, 'and a link to the line', bt);
      const body = await page.locator('#live').innerText();
      const count = (re) => (body.match(re) || []).length;
      t.eq(count(/but expected 1\.25/g), 1, 'the failing case\'s message appears once on the page', body);
      t.eq(count(/Check the bounds of your last block/g), 1, 'its hint appears once on the page');
      t.eq(count(/put __syncthreads\(\) between/g), 1, 'a race found 7 times on one line: its hint once');
      const fl = await page.locator('.sanitizer ul.findings li').allInnerTexts();
      t.eq(fl.length, 1, 'the 7 findings on line 5 are one line of the list', fl.join('\n'));
      t.ok(/7 times/.test(fl[0] || '') && !/0x7f3a/.test(fl[0] || ''), '...saying 7 times, without raw addresses', fl[0]);
    });

    await t.step('outcomes: partial, not run, hidden tests add up', async () => {
      await page.goto(`${s.url}/submissions/${ids.partial}`);
      const speed = page.locator('table.tests tr', { hasText: 'speed vs cuBLAS' });
      t.eq(await speed.locator('.badge').innerText(), 'partial', 'a test with 22 of 50 points is "partial"');
      t.eq(await speed.locator('.badge.good').count(), 0, '...not a green "passed"');
      const hidden = page.locator('table.tests tr.hidden-tests');
      t.eq(await hidden.count(), 1, 'the hidden test has a placeholder row');
      const ht = await hidden.innerText();
      t.ok(/1 hidden test/.test(ht) && /30 points/.test(ht) && /30 \/ 30/.test(ht), '...with its count and points', ht);
      t.ok(!/SECRET-HIDDEN-OUTPUT/.test(await page.content()), '...and nothing of its output');
      const pts = await page.$$eval('table.tests tbody tr td.num', (tds) => tds.map((x) => x.textContent));
      const sum = pts.reduce((a, x) => { const m = x.match(/([\d.]+) \/ ([\d.]+)/); return m ? [a[0] + +m[1], a[1] + +m[2]] : a; }, [0, 0]);
      t.eq(sum.join(' / '), '52 / 100', 'the rows add up to the score', pts.join(', '));
      await page.goto(`${s.url}/submissions/${ids.compile}`);
      const rows = await page.locator('table.tests tbody tr:not(.hidden-tests)').count();
      t.eq(rows, 1, 'a compile error folds its not-run tests into one row');
      const nr = page.locator('table.tests tr.not-run');
      t.ok(/3 tests/.test(await nr.innerText()) && (await nr.locator('.badge.neutral').count()) === 1, '...a neutral "not run", not red', await nr.innerText());
      t.ok(/identifier "x" is undefined/.test(await page.locator('#fix-first').innerText()), 'the first compiler error is what to fix first');
      await page.goto(`${s.url}/submissions/${ids.system}`);
      const live = await page.locator('#live').innerText();
      t.ok(!/0 \/ 0/.test(live), 'a system error shows no "0 / 0"', live);
      t.ok(!/\/var\/lib\/cugrade-runner/.test(await page.content()), '...and no host path');
    });

    await t.step('speed: log scale, against each reference, no cuBLAS n/a', async () => {
      await page.goto(`${s.url}/submissions/${ids.partial}`);
      t.eq(await page.locator('svg.chart.log').count(), 1, 'the speed chart is on a log scale');
      const labels = await page.locator('svg.chart.log text.lbl').allTextContents();
      t.ok(!labels.includes('cuBLAS'), 'a lab timed without cuBLAS has no cuBLAS row', labels.join(', '));
      t.ok(!/n\/a/.test(await page.locator('svg.chart.log').innerHTML()), '...and no "n/a"');
      const widths = await page.$$eval('svg.chart.log rect', (rs) => rs.map((r) => +r.getAttribute('width')));
      t.ok(Math.min(...widths) >= 20, `the 0.4 ms kernel beside a 106 ms CPU is a visible bar (${widths.join(', ')} px)`);
      const vs = await page.locator('ul.versus').innerText();
      t.ok(/265 times faster than CPU/.test(vs) && /22\.[78] times faster than naive/.test(vs), 'x times faster than each reference', vs);
      const next = await page.locator('.next-tier').innerText();
      t.ok(/within 2x of cuBLAS/.test(next) && /50 points/.test(next), 'the next tier and its points', next);
      t.ok(/ratio_to_cublas ≤ 2x; yours is 3\.10x/.test(next), 'the threshold and the value as the metric table shows them (unit, direction)', next);
      t.ok(/lower is better/.test(await page.locator('.next-tier code').getAttribute('title')), '...and the metric\'s label on its name');
    });

    await t.step('rank and history on the result page', async () => {
      await page.goto(`${s.url}/submissions/${ids.timeout}`);
      const st = await page.locator('#standing').innerText();
      t.ok(/#1 on the scoreboard/.test(st), 'the result page shows the student\'s rank', st);
      t.ok(await page.locator(`#standing a[href="/submissions/${ids.timeout}"][aria-current=page]`).count() === 1 &&
        await page.locator(`#standing a[href="/submissions/${ids.race}"]`).count() >= 1,
      '...and their latest submissions, this one marked', st);
    });

    await t.step('one date format, scores without trailing zeros', async () => {
      await page.goto(`${s.url}/submissions/${ids.partial}`);
      const body = await page.locator('body').innerText();
      const dates = body.match(/\d{4}-\d\d-\d\d[^\n]{0,24}/g) || [];
      t.ok(dates.length > 0 && dates.every((d) => /^\d{4}-\d\d-\d\d \d\d:\d\d UTC \((just now|\d+ \w+ ago|in \d+ \w+)\)/.test(d)),
        'every date on the result page reads "YYYY-MM-DD HH:MM UTC (x ago)"', dates.join('\n'));
      t.ok(!/\d\.0+\b(?! ?ms)/.test(await page.locator('#live').innerText().then((x) => x.replace(/\d+\.\d+ ?(ms|%)/g, ''))),
        'no score or count with trailing zeros ("52 / 100", not "52.00")');
    });

    await t.step('dates in the reader\'s own time zone', async () => {
      const tokyo = await newPage(b, { timezoneId: 'Asia/Tokyo' });
      await signIn(tokyo, s, 'alice');
      await tokyo.goto(`${s.url}/submissions/${ids.partial}`);
      const el = tokyo.locator('time[datetime]').first();
      const [text, title, iso] = [await el.innerText(), await el.getAttribute('title'), await el.getAttribute('datetime')];
      const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d) (GMT\+9|JST)$/.exec(text);
      const utc = Date.parse(iso);
      const shown = m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]) - 9 * 3600e3 : NaN;
      t.ok(m && /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/.test(title) && Math.abs(shown - utc) < 60e3,
        'a reader in Tokyo sees the time in their zone with its name; the title keeps UTC',
        `${text} | ${title} | ${iso}`);
      await tokyo.context().close();
    });

    await t.step('timeout and runtime error: each thing said once, nothing blamed on a case that never ran', async () => {
      await page.goto(`${s.url}/submissions/${ids.timeout}`);
      let live = await page.locator('#live').innerText();
      t.eq((live.match(/loop that never ends/gi) || []).length, 1, 'a timeout says where to look once, not in a notice and again below', live);
      t.eq(await page.locator('#fix-first').count(), 0, 'a timeout alone has no "What to fix first" box that calls a case that never ran wrong');
      const cb = await page.locator('table.cases tr', { hasText: 'small' }).locator('.badge');
      t.ok(await cb.innerText() === 'not run' && /neutral/.test(await cb.getAttribute('class')),
        'the correctness case that never ran is "not run", not a red "failed"', await cb.innerText());
      await page.goto(`${s.url}/submissions/${ids.race}`);
      live = await page.locator('#live').innerText();
      t.eq((live.match(/illegal memory access/g) || []).length, 1, 'a runtime error\'s cause is said once', live);
      t.eq((live.match(/Invalid __global__ write/g) || []).length, 1, 'a sanitizer finding is listed once (under Sanitizers, not again in the tests table)', live);
      t.eq(await page.locator('table.tests a[href="#sanitizers"]').count(), 1, '...the tests table links to it');
      const box = await page.locator('#fix-first').innerText();
      t.ok(/Case small is wrong/.test(box) && /sanitizer found a problem on line 14/i.test(box),
        'the box names the failing case, and a link to a finding\'s line says it is the sanitizer\'s', box);
      await page.goto(`${s.url}/submissions/${ids.pass}`);
      const hidden = await page.locator('table.tests tr.hidden-tests').innerText();
      t.eq((hidden.match(/hidden test/g) || []).length, 1, 'the hidden tests\' row says "1 hidden test" once', hidden);
      const p = await newPage(b, { viewport: PHONE });
      await signIn(p, s, 'alice');
      await p.goto(`${s.url}/submissions/${ids.race}`);
      t.eq(await p.evaluate(() => document.getElementById('score').getClientRects().length), 1,
        'at 375 px the score "0 / 100" stays on one line');
      const hist = await p.$$eval('#standing .nowrap', (es) => es.map((e) => [e.textContent, e.getClientRects().length]));
      t.ok(hist.length >= 3 && hist.every(([, n]) => n === 1),
        'at 375 px each score of your latest submissions stays on one line ("100 / 100", not "100 /" then "100")', JSON.stringify(hist));
      await p.close();
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
    await t.step('hidden tests before and after the due date', async () => {
      // The big case shows after the due date; bob's own due date passes
      // after his submission was graded.
      const rub = (await s.api('GET', '/api/admin/labs/vadd/rubric', 'admin')).json.rubric;
      rub.correctness.find((c) => c.case === 'big').visibility = 'after_due_date';
      const put = await s.api('PUT', '/api/admin/labs/vadd/rubric', 'admin', rub);
      t.eq(put.status, 200, 'the admin shows the big case after the due date', put.text);
      const id = await submitApi(s, 'bob', 'vadd', kernel('hidden'), 'hidden.cu');
      const job = await runner.claimId(id);
      const d = resultDoc(job, { score: 75, speedup: 0.32 });
      d.tests = [
        { name: 'correctness: small', score: 10, max_score: 10, status: 'passed', output: 'correct; max abs err 0, max rel err 0', visibility: 'visible' },
        { name: 'correctness: big', score: 30, max_score: 30, status: 'passed', output: 'correct; max abs err 1e-07, max rel err 2e-07', visibility: 'after_due_date' },
        { name: 'sanitizer (memcheck, racecheck)', score: 10, max_score: 10, status: 'passed', output: 'memcheck: clean; racecheck: clean', visibility: 'visible' },
        { name: 'speed vs cuBLAS', score: 25, max_score: 50, status: 'passed', output: 'ratio_to_cublas = 3.1: within 4x of cuBLAS', visibility: 'visible' },
      ];
      d.cugrade.speed = [{ name: 'speed vs cuBLAS', metric: 'ratio_to_cublas', value: 3.1, tier: 'within 4x of cuBLAS', points: 25, max_points: 50 }];
      await runner.result(job, 'graded', d);
      await s.waitStatus(id, 'graded');
      const rowsAddUp = async (p) => {
        const pts = await p.$$eval('table.tests tbody tr td.num', (tds) => tds.map((x) => x.textContent));
        const sum = pts.reduce((a, x) => { const m = x.match(/([\d.]+) \/ ([\d.]+)/); return m ? [a[0] + +m[1], a[1] + +m[2]] : a; }, [0, 0]);
        return sum.join(' / ');
      };
      for (const vp of [DESKTOP, PHONE]) {
        const p = await newPage(b, { viewport: vp });
        await signIn(p, s, 'bob');
        await p.goto(`${s.url}/submissions/${id}`);
        const row = p.locator('table.tests tr.hidden-tests');
        const rt = await row.count() ? await row.innerText() : '';
        t.ok(/1 hidden test/.test(rt) && /shown after the due date/.test(rt), `before the due date (${vp.width} px): one placeholder row, shown after the due date`, rt);
        t.eq(await rowsAddUp(p), '75 / 100', '...and the rows add up to the score');
        t.ok(!/max abs err 1e-07/.test(await p.content()), '...and nothing of the hidden test\'s output');
        await p.screenshot({ path: path.join(SHOT_DIR, `result-hidden-before${vp === PHONE ? '-375' : ''}.png`), fullPage: true });
        await p.close();
      }
      const past = new Date(Date.now() - 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      const ext = await s.api('POST', '/api/admin/extensions', 'adam', { user: 'bob', lab: 'vadd', due: past });
      t.eq(ext.status, 200, 'bob\'s own due date is an hour ago', ext.text);
      for (const vp of [DESKTOP, PHONE]) {
        const p = await newPage(b, { viewport: vp });
        await signIn(p, s, 'bob');
        await p.goto(`${s.url}/submissions/${id}`);
        t.eq(await p.locator('table.tests tr.hidden-tests').count(), 0, `after the due date (${vp.width} px): no placeholder row`);
        const big = p.locator('table.tests tr', { hasText: 'correctness: big' });
        t.ok(await big.count() === 1 && /max abs err 1e-07/.test(await big.innerText()), '...the big case\'s own row with its output');
        t.eq(await rowsAddUp(p), '75 / 100', '...and the rows add up to the score');
        const vs = await axeSerious(p);
        t.eq(vs.length, 0, `hidden tests after the due date at ${vp.width} px: no serious or critical axe-core violation`,
          vs.map((v) => `${v.impact} ${v.id}: ${v.help} ${v.nodes.join(', ')}`).join('\n'));
        await p.screenshot({ path: path.join(SHOT_DIR, `result-hidden-after${vp === PHONE ? '-375' : ''}.png`), fullPage: true });
        await p.close();
      }
    });
    await page.close();
  } finally {
    await b.close();
    await s.close();
  }
});
