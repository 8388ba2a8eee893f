#!/usr/bin/env node
'use strict';
/*
 * notebook_shot.js IN.html OUT.png - open a notebook that `jupyter nbconvert
 * --execute --to html` wrote (tests/client/notebook.t) in Debian's chromium
 * (tests/pages/lib.js browser()), offline: every request that is not the
 * file itself is aborted (the template names CDN scripts). Screenshots the
 * cell that holds the %%cugrade result, input and output, to OUT.png and
 * prints one JSON line: what was rendered there (table rows, chart bars,
 * the box's size), for the test to check.
 */
const path = require('path');
const { browser } = require('../pages/lib');

(async () => {
  const [input, out] = process.argv.slice(2);
  const b = await browser();
  let code = 0;
  try {
    const ctx = await b.newContext({ viewport: { width: 980, height: 900 } });
    const page = await ctx.newPage();
    await page.route('**/*', (r) => (r.request().url().startsWith('file:') ? r.continue() : r.abort()));
    await page.goto('file://' + path.resolve(input), { waitUntil: 'load' });
    const result = await page.$('.cugrade-result');
    if (!result) throw new Error('no .cugrade-result in ' + input);
    // From the %%cugrade test cell (when there is one) to the bottom of
    // the cell with the result, in page coordinates.
    const clip = await page.evaluate(() => {
      const cellOf = (el) => (el && (el.closest('.jp-Cell') || el.closest('.cell'))) || el;
      const last = cellOf(document.querySelector('.cugrade-result'));
      const first = cellOf(document.querySelector('pre.cugrade-test')) || last;
      const a = first.getBoundingClientRect(), b = last.getBoundingClientRect();
      const x = Math.min(a.left, b.left), y = a.top + window.scrollY;
      return { x, y, width: Math.max(a.right, b.right) - x, height: b.bottom + window.scrollY - y };
    });
    await page.screenshot({ path: out, clip, fullPage: true });
    const box = await result.boundingBox();
    const info = await result.evaluate((el) => ({
      rows: el.querySelectorAll('table tbody tr').length,
      bars: el.querySelectorAll('svg.cugrade-chart rect').length,
      text: el.innerText.slice(0, 200),
    }));
    const test = await page.evaluate(() => {
      const pre = document.querySelector('pre.cugrade-test');
      return pre ? pre.innerText.slice(0, 400) : '';
    });
    console.log(JSON.stringify({ ...info, test_cell: !!test, test_text: test,
      width: Math.round(box.width), height: Math.round(box.height) }));
  } catch (e) {
    console.error(e && e.stack ? e.stack : String(e));
    code = 1;
  } finally {
    await b.close();
  }
  process.exit(code);
})();
