#!/usr/bin/env node
'use strict';
/*
 * security.t - what an attacker tries through the web pages, in a real
 * browser: script in a file name, in source code, in compiler output (via
 * the fake runner's result) and in a display name must show up as text with
 * no dialog fired; forms posted without the CSRF token are refused; every
 * page carries the security headers; a student cannot open another
 * student's submission.
 */
const { Server, Runner, resultDoc, browser, newPage, signIn, shot, kernel, submitApi, run } = require('./lib');

const XSS_NAME = '<img src=x onerror=alert(1)>.cu';
const XSS_SRC = '// </textarea></td><script>alert("src")</script><img src=x onerror=alert(2)>\n' + kernel('xss');
const XSS_LOG = 'kernel.cu(3): error: identifier "<script>alert(\'cc\')</script><img src=x onerror=alert(3)>" is undefined';
const XSS_DISPLAY = '<b onmouseover=alert(4)>Eve</b><script>alert(5)</script>';

run(async (t) => {
  const s = new Server({
    users: [...Server.DEFAULT_USERS, ['eve', 'student', XSS_DISPLAY]],
  });
  t.server = s;
  await s.start();
  const b = await browser();
  const runner = new Runner(s);
  try {
    const page = await newPage(b);
    await signIn(page, s, 'eve');

    await t.step('a script in a file name shows as text', async () => {
      await page.goto(s.url + '/labs/vadd');
      await page.setInputFiles('input#file', { name: XSS_NAME, mimeType: 'text/plain', buffer: Buffer.from(kernel('name')) });
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      const problem = await page.locator('#problem').textContent().catch(() => '');
      t.ok(problem.includes(XSS_NAME), 'the refused file name is shown literally in the message', problem);
      t.ok(problem.includes('Rename the file'), 'the message says what to do');
      t.eq(await page.locator('#problem img').count(), 0, 'no <img> element was created from the file name');
      t.eq(page.dialogs.length, 0, 'no dialog fired (file name)', page.dialogs.join('\n'));
    });

    let srcId;
    await t.step('a script in source code shows as text', async () => {
      await page.goto(s.url + '/labs/vadd');
      await page.fill('textarea#source', XSS_SRC);
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      srcId = Number((page.url().match(/\/submissions\/(\d+)$/) || [])[1]);
      t.ok(srcId > 0, 'the source with markup in it is accepted', page.url());
      await page.goto(`${s.url}/submissions/${srcId}/source`);
      const line1 = await page.locator('table.src tr:first-child td.code').textContent();
      t.eq(line1, XSS_SRC.split('\n')[0], 'line 1 of the source is shown exactly as written');
      t.eq(await page.locator('table.src script, table.src img').count(), 0, 'no element was created from the source');
      t.eq(page.dialogs.length, 0, 'no dialog fired (source)', page.dialogs.join('\n'));
      // The source also comes back into the paste box when a submit is refused.
      await page.goto(s.url + '/labs/vadd');
      await page.fill('textarea#source', XSS_SRC);
      await page.fill('input#filename', 'bad name.cu');
      await page.evaluate(() => { document.getElementById('submit-form').noValidate = true; });
      await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      t.eq(await page.inputValue('textarea#source'), XSS_SRC, 'a refused paste comes back intact in the paste box');
      t.eq(page.dialogs.length, 0, 'no dialog fired (paste box)', page.dialogs.join('\n'));
    });

    await t.step('a script in compiler output shows as text, live and after a reload', async () => {
      const id = await submitApi(s, 'eve', 'vadd', kernel('cc'), 'cc.cu');
      await page.goto(`${s.url}/submissions/${id}`);
      const job = await runner.claimId(id);
      await runner.result(job, 'compile_error', resultDoc(job, { status: 'compile_error', score: 0, compile_log: XSS_LOG }));
      await page.waitForSelector('#live[data-final="1"]', { timeout: 8000 });
      const log = await page.locator('pre.log').textContent();
      t.ok(log.includes('<script>alert(\'cc\')</script><img src=x onerror=alert(3)>'), 'the compiler output shows the markup literally (live update)', log);
      t.ok(await page.isVisible(`pre.log a[href="/submissions/${id}/source#L3"]`), 'the error links to line 3 of the source');
      t.eq(await page.locator('pre.log script, pre.log img').count(), 0, 'no element was created from the compiler output');
      await page.reload();
      t.ok((await page.locator('pre.log').textContent()).includes('onerror=alert(3)>'), 'the same after a reload');
      t.eq(await page.locator('pre.log script, pre.log img').count(), 0, 'no element after a reload either');
      await shot(page, '13-xss-shown-as-text');
      t.eq(page.dialogs.length, 0, 'no dialog fired (compiler output)', page.dialogs.join('\n'));
    });

    await t.step('a script in a display name shows as text', async () => {
      const id = await submitApi(s, 'eve', 'vadd', kernel('dn'));
      const job = await runner.claimId(id);
      await runner.result(job, 'graded', resultDoc(job, { score: 42 }));
      const ta = await newPage(b);
      await signIn(ta, s, 'tina');
      await ta.goto(s.url + '/labs/vadd/scoreboard');
      const cell = await ta.locator('#scoreboard tr', { hasText: 'eve' }).textContent();
      t.ok(cell.includes(XSS_DISPLAY), 'the TA scoreboard shows the display name literally', cell);
      await ta.hover('#scoreboard tr:has-text("eve")');
      t.eq(await ta.locator('#scoreboard b, #scoreboard script').count(), 0, 'no element was created from the display name');
      t.eq(ta.dialogs.length, 0, 'no dialog fired (display name)', ta.dialogs.join('\n'));
      t.ok(await page.isVisible('header .who') && (await page.locator('header .who').textContent()).includes(XSS_DISPLAY),
        'the header shows the display name literally');
      await ta.close();
    });

    await t.step('forms without the CSRF token are refused', async () => {
      const count = async () => (await s.api('GET', '/api/submissions?user=eve&lab=vadd', 'eve')).json.submissions.length;
      const before = await count();
      await page.goto(s.url + '/labs/vadd');
      await page.fill('textarea#source', kernel('csrf'));
      await page.evaluate(() => document.querySelector('#submit-form input[name=csrf]').remove());
      const [resp] = await Promise.all([page.waitForNavigation(), page.click('#submit-form button[type=submit]')]);
      t.eq(resp.status(), 403, 'a submit without the CSRF token answers 403');
      t.ok(await page.isVisible('text=This form has expired'), 'and says to reload the page and send it again');
      t.eq(await count(), before, 'no submission was stored');

      const ta = await newPage(b);
      await signIn(ta, s, 'tina');
      await ta.goto(`${s.url}/submissions/${srcId}`);
      await ta.fill('#ov-score', '99');
      await ta.fill('#ov-reason', 'forged');
      await ta.evaluate(() => { document.querySelector('form[action$="/override"] input[name=csrf]').value = '0'.repeat(64); });
      const [r2] = await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/override"] button')]);
      t.eq(r2.status(), 403, 'an override with a wrong CSRF token answers 403');
      const sub = await s.submission(srcId);
      t.ok(sub && sub.score !== 99, 'and the score did not change', JSON.stringify(sub && sub.score));

      // A cross-site form: another origin posts to us with the session.
      const r3 = await ta.request.post(`${s.url}/submissions/${srcId}/override`, { form: { score: '99', reason: 'forged' }, maxRedirects: 0 });
      t.eq(r3.status(), 403, 'a POST with the session cookie but no token answers 403');
      // Positive control: the same form with its token works.
      await ta.goto(`${s.url}/submissions/${srcId}`);
      await ta.fill('#ov-score', '7');
      await ta.fill('#ov-reason', 'control');
      await Promise.all([ta.waitForNavigation(), ta.click('form[action$="/override"] button')]);
      t.ok(ta.url().endsWith('?done=override'), 'the same form with its token is accepted', ta.url());
      await ta.close();

      // Sign-in CSRF: the login form's token must match its cookie.
      const r4 = await fetch(s.url + '/login', { method: 'POST', redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `csrf=abc&token=${s.tok.alice}` });
      t.eq(r4.status, 403, 'a sign-in post without the login cookie is refused');
      t.ok(!/cugrade_session=[0-9a-f]{64}/.test(r4.headers.get('set-cookie') || ''), 'and starts no session', r4.headers.get('set-cookie'));
    });

    await t.step('security headers and cookies', async () => {
      const r = await page.goto(s.url + '/labs');
      const h = r.headers();
      const csp = h['content-security-policy'] || '';
      t.ok(/default-src 'self'/.test(csp), "CSP has default-src 'self'", csp);
      t.ok(!/unsafe-inline|unsafe-eval/.test(csp), 'CSP allows no unsafe-inline or unsafe-eval', csp);
      t.ok(/frame-ancestors 'none'/.test(csp), "CSP has frame-ancestors 'none'", csp);
      t.eq(h['x-content-type-options'], 'nosniff', 'X-Content-Type-Options: nosniff');
      t.ok(!!h['referrer-policy'], 'a Referrer-Policy is set', h['referrer-policy']);
      t.ok(/no-store/.test(h['cache-control'] || ''), 'pages are not cached', h['cache-control']);
      const html = await page.content();
      t.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), 'the page has no inline script');
      const handlers = await page.evaluate(() => [...document.querySelectorAll('*')]
        .flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => e.tagName + ' ' + a.name)));
      t.eq(handlers.length, 0, 'no element has an inline event handler attribute', handlers.join(', '));
      t.ok(/onmouseover=alert/.test(await page.textContent('header .who')), 'the header text still holds the attempted handler as text');
      const css = await fetch(s.url + '/static/style.css');
      t.ok(/^text\/css/.test(css.headers.get('content-type')), 'the stylesheet is served as text/css', css.headers.get('content-type'));
      const js = await fetch(s.url + '/static/app.js');
      t.ok(/javascript/.test(js.headers.get('content-type')), 'the script is served as JavaScript', js.headers.get('content-type'));
      const link = await page.getAttribute('script[src]', 'src');
      t.ok(/^\/static\/app\.js\?v=[0-9a-f]{16}$/.test(link), 'the script link carries a content version', link);
      const vjs = await fetch(s.url + link);
      t.ok(/immutable/.test(vjs.headers.get('cache-control') || ''), 'the versioned script link may be cached', vjs.headers.get('cache-control'));
      const etag = vjs.headers.get('etag');
      const again = await fetch(s.url + '/static/app.js', { headers: { 'If-None-Match': etag } });
      t.eq(again.status, 304, 'a static file revalidates with its ETag');

      // Secure cookies behind a TLS proxy.
      const g = await fetch(s.url + '/login', { headers: { 'X-Forwarded-Proto': 'https' } });
      const lc = g.headers.get('set-cookie') || '';
      const tok = (lc.match(/cugrade_login=([0-9a-f]+)/) || [])[1];
      t.ok(/Secure/.test(lc) && /HttpOnly/.test(lc) && /SameSite=Strict/.test(lc), 'over https the login cookie is Secure, HttpOnly, SameSite=Strict', lc);
      const p = await fetch(s.url + '/login', { method: 'POST', redirect: 'manual', headers: {
        'X-Forwarded-Proto': 'https', 'Content-Type': 'application/x-www-form-urlencoded', Cookie: `cugrade_login=${tok}` },
      body: `csrf=${tok}&token=${s.tok.alice}` });
      const sc = p.headers.get('set-cookie') || '';
      t.eq(p.status, 303, 'a valid sign-in redirects');
      t.ok(/cugrade_session=[0-9a-f]{64}/.test(sc) && /Secure/.test(sc) && /HttpOnly/.test(sc) && /SameSite=Strict/.test(sc),
        'over https the session cookie is Secure, HttpOnly, SameSite=Strict', sc);
    });

    await t.step('students cannot see each other\'s work', async () => {
      const other = await newPage(b);
      await signIn(other, s, 'bob');
      const r = await other.goto(`${s.url}/submissions/${srcId}`);
      t.eq(r.status(), 403, 'another student\'s submission page answers 403');
      const r2 = await other.goto(`${s.url}/submissions/${srcId}/source`);
      t.eq(r2.status(), 403, 'another student\'s source answers 403');
      t.ok(!(await other.content()).includes('alert("src")'), 'and shows none of it');
      const r3 = await other.goto(`${s.url}/admin/users`);
      t.eq(r3.status(), 403, 'a student cannot open the admin pages');
      const r4 = await other.goto(`${s.url}/audit`);
      t.eq(r4.status(), 403, 'a student cannot open the audit log');
      await other.close();
    });
    await page.close();
  } finally {
    await b.close();
    await s.close();
  }
});
