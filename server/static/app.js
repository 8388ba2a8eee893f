/* cugrade web UI: the only script. Loaded with <script src defer>, no inline
 * code (the Content-Security-Policy forbids it). Everything here is an
 * extra: every page works without JavaScript.
 *   - live submission page: polls /submissions/ID?part=live and swaps the
 *     #live section in place until the submission reaches a final status;
 *   - sortable tables: <table class="sortable"> with <th data-sort="num|text">
 *     and cells carrying data-value;
 *   - scroll boxes (.scroll) are tab stops only while their content overflows;
 *   - dates (<time datetime>) in the reader's own time zone. */
(function () {
  'use strict';
  document.documentElement.classList.add('js');

  /* ---- live submission ------------------------------------------------ */
  function startLive(live) {
    var src = live.getAttribute('data-src');
    var started = Date.now();
    var failures = 0;
    var timer = null;

    function delay() {
      /* Fast while a student is watching a fresh submission, gentler later. */
      var age = Date.now() - started;
      if (failures > 0) return Math.min(15000, 2000 * failures);
      return age < 60000 ? 1000 : age < 600000 ? 3000 : 10000;
    }
    function status(text) {
      var s = document.getElementById('live-status');
      if (s) s.textContent = text;
    }
    function poll() {
      timer = null;
      fetch(src, { credentials: 'same-origin', cache: 'no-store', headers: { 'Accept': 'text/html' } })
        .then(function (res) {
          if (res.status === 401 || res.status === 403) {
            throw new Error('Your session ended. Sign in again, then reload this page.');
          }
          if (!res.ok) throw new Error('The server answered ' + res.status + '; retrying.');
          return res.text();
        })
        .then(function (html) {
          failures = 0;
          var doc = new DOMParser().parseFromString(html, 'text/html');
          var fresh = doc.getElementById('live');
          if (!fresh) throw new Error('Unexpected answer from the server; retrying.');
          live.replaceWith(document.importNode(fresh, true));
          live = document.getElementById('live');
          initSortable(live);
          fitScrollBoxes(live);
          localDates(live);
          var t = live.getAttribute('data-title');
          if (t) document.title = t;
          if (live.getAttribute('data-final') !== '1') schedule();
        })
        .catch(function (err) {
          failures++;
          status(String(err && err.message || err));
          if (!/session ended/.test(String(err && err.message))) schedule();
        });
    }
    function schedule() {
      if (timer === null) timer = setTimeout(poll, delay());
    }
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && live.getAttribute('data-final') !== '1' && timer === null) poll();
    });
    schedule();
  }

  /* ---- sortable tables --------------------------------------------------- */
  function cellValue(row, idx, kind) {
    var c = row.cells[idx];
    if (!c) return kind === 'num' ? -Infinity : '';
    var v = c.hasAttribute('data-value') ? c.getAttribute('data-value') : c.textContent;
    if (kind === 'num') {
      var n = parseFloat(v);
      return isNaN(n) ? -Infinity : n;
    }
    return v.trim().toLowerCase();
  }
  function sortBy(table, th) {
    var idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var kind = th.getAttribute('data-sort');
    var desc = th.getAttribute('aria-sort') !== 'descending';
    var body = table.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, idx, kind), y = cellValue(b, idx, kind);
      var r = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -r : r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
  }
  function initSortable(root) {
    Array.prototype.forEach.call(root.querySelectorAll('table.sortable th[data-sort]'), function (th) {
      if (th.getAttribute('data-bound')) return;
      th.setAttribute('data-bound', '1');
      th.setAttribute('tabindex', '0');
      var table = th.closest('table');
      th.addEventListener('click', function (e) {
        if (e.target.tagName === 'A') e.preventDefault();
        sortBy(table, th);
      });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(table, th); }
      });
    });
  }

  /* ---- scroll boxes: a tab stop only while they scroll --------------------
   * Tables and handout code sit in <div class="scroll" tabindex="0"> so a
   * keyboard can scroll them on a narrow screen; a box whose content fits
   * needs no tab stop, so it leaves the tab order until it scrolls again. */
  function fitScrollBoxes(root) {
    Array.prototype.forEach.call(root.querySelectorAll('.scroll[role=region]'), function (box) {
      if (box.scrollWidth > box.clientWidth + 1) box.setAttribute('tabindex', '0');
      else box.removeAttribute('tabindex');
    });
  }

  /* ---- dates in the reader's own time zone -------------------------------
   * The server writes <time datetime="ISO">YYYY-MM-DD HH:MM UTC</time>: only
   * the browser knows the reader's zone. The same format in local time,
   * with the zone's short name; the UTC text stays in the title. */
  function pad(n) { return (n < 10 ? '0' : '') + n; }
  function localDates(root) {
    if (!window.Intl || !Intl.DateTimeFormat) return;
    Array.prototype.forEach.call(root.querySelectorAll('time[datetime]'), function (el) {
      if (el.getAttribute('data-local')) return;
      var d = new Date(el.getAttribute('datetime'));
      if (isNaN(d.getTime())) return;
      var zone = '';
      try {
        new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(d)
          .forEach(function (p) { if (p.type === 'timeZoneName') zone = p.value; });
      } catch (e) { return; }
      if (!zone) return;
      el.textContent = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
        pad(d.getHours()) + ':' + pad(d.getMinutes()) + ' ' + zone;
      el.setAttribute('data-local', '1');
    });
  }

  /* ---- file input: show what will be sent -------------------------------- */
  function initUpload() {
    var input = document.getElementById('file');
    var note = document.getElementById('file-note');
    if (!input || !note) return;
    /* the lab's languages: the form's accept (".cu", ".py" or ".cu,.py") */
    var exts = (input.getAttribute('accept') || '.cu').split(',');
    input.addEventListener('change', function () {
      var f = input.files && input.files[0];
      if (!f) { note.textContent = ''; return; }
      if (f.size > 256 * 1024) {
        note.textContent = f.name + ' is ' + Math.round(f.size / 1024) + ' KiB; the limit is 256 KiB. ' +
          'Submit only your kernel source file.';
      } else if (!exts.some(function (e) { return f.name.slice(-e.length) === e; })) {
        note.textContent = f.name + ' does not end in ' + exts.join(' or ') +
          '; this lab accepts only ' + exts.join(' and ') + ' files.';
      } else {
        note.textContent = f.name + ' (' + f.size + ' bytes) will be sent.';
      }
    });
  }

  function init() {
    var live = document.getElementById('live');
    if (live && live.getAttribute('data-final') !== '1' && live.getAttribute('data-src')) startLive(live);
    initSortable(document);
    localDates(document);
    initUpload();
    fitScrollBoxes(document);
    var resizing = null;
    window.addEventListener('resize', function () {
      clearTimeout(resizing);
      resizing = setTimeout(function () { fitScrollBoxes(document); }, 150);
    });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
