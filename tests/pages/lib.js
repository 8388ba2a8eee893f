'use strict';
/*
 * lib.js - shared helpers for the real-browser page tests (tests/pages/*.t).
 *
 *  - Tap: prints `ok - name` / `not ok - name` lines (TAP) with diagnostics.
 *  - Server: the real $CUGRADE_BUILD/cugrade-server (init + serve) on a free
 *    port in a temp dir, with the repo's labs/ + rubrics/ and our fixture lab
 *    "vadd" (tests/pages/fixtures), and one user per role.
 *  - Runner: a tiny fake runner speaking the runner protocol (claim,
 *    progress, result) so tests decide exactly when a result arrives.
 *  - browser(): Debian's /usr/bin/chromium driven by playwright-core, headless,
 *    with a fresh profile (playwright's launch() makes a new --user-data-dir
 *    per browser and removes it on close).
 *
 * Environment: CUGRADE_BUILD (binary folder), CUGRADE_ROOT (repo root),
 * CHROMIUM (browser path, default /usr/bin/chromium), KEEP=1 keeps temp dirs.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const { spawn, execFileSync } = require('child_process');

const ROOT = process.env.CUGRADE_ROOT || path.resolve(__dirname, '..', '..');
const BUILD = process.env.CUGRADE_BUILD || path.join(ROOT, 'build');
const BINARY = path.join(BUILD, 'cugrade-server');
const FIXTURES = path.join(__dirname, 'fixtures');
const SHOTS = path.join(BUILD, 'screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/* ------------------------------------------------------------------ TAP */

class Tap {
  constructor() {
    this.n = 0;
    this.failed = 0;
    this.server = null;
  }
  ok(cond, name, diag) {
    this.n++;
    name = String(name).replace(/\n/g, ' ');
    if (cond) {
      console.log(`ok ${this.n} - ${name}`);
    } else {
      this.failed++;
      console.log(`not ok ${this.n} - ${name}`);
      if (diag !== undefined) this.diag(diag);
    }
    return !!cond;
  }
  eq(got, want, name, diag) {
    return this.ok(got === want, name,
      `got:  ${JSON.stringify(got)}\nwant: ${JSON.stringify(want)}` + (diag ? '\n' + diag : ''));
  }
  diag(msg) {
    String(msg).split('\n').slice(0, 40).forEach((l) => console.log('#   ' + l));
  }
  /* Run one named step; an exception is one failed check (with the server
   * log tail), and the script goes on with the next step. */
  async step(name, fn) {
    try {
      await fn();
    } catch (e) {
      this.ok(false, `${name}: ran to the end without an exception (${e && e.message ? e.message.split('\n')[0] : e})`,
        (e && e.stack ? e.stack : String(e)) + (this.server ? '\nserver log tail:\n' + this.server.logTail() : ''));
    }
  }
  done() {
    console.log(`1..${this.n}`);
    return this.failed ? 1 : 0;
  }
}

/* --------------------------------------------------------------- server */

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TOKEN_RE = /\bcg([star])_[0-9a-f]{64}\b/g;

function copyDir(src, dst) {
  fs.mkdirSync(dst, { recursive: true });
  for (const e of fs.readdirSync(src, { withFileTypes: true })) {
    const s = path.join(src, e.name), d = path.join(dst, e.name);
    if (e.isDirectory()) copyDir(s, d);
    else if (e.isFile()) fs.copyFileSync(s, d);
  }
}

class Server {
  /* users: [name, role, display_name] created through POST /api/admin/users. */
  constructor(opts = {}) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cugrade-pages-'));
    this.db = path.join(this.dir, 'cugrade.db');
    this.labsDir = path.join(this.dir, 'labs');
    this.rubricsDir = path.join(this.dir, 'rubrics');
    this.log = path.join(this.dir, 'server.log');
    this.useRepoLabs = opts.repoLabs !== false;
    this.users = opts.users || Server.DEFAULT_USERS;
    this.tok = {};
    this.names = {};
    this.proc = null;
  }

  installLabs(withRepo) {
    fs.rmSync(this.labsDir, { recursive: true, force: true });
    fs.rmSync(this.rubricsDir, { recursive: true, force: true });
    fs.mkdirSync(this.labsDir);
    fs.mkdirSync(this.rubricsDir);
    const repoLabs = path.join(ROOT, 'labs'), repoRubrics = path.join(ROOT, 'rubrics');
    if (withRepo && fs.existsSync(repoLabs)) {
      // The labs' shared symbol allow-list ("allow": {"base": ...}).
      const allow = path.join(repoLabs, 'common', 'allow.json');
      if (fs.existsSync(allow)) {
        fs.mkdirSync(path.join(this.labsDir, 'common'));
        fs.copyFileSync(allow, path.join(this.labsDir, 'common', 'allow.json'));
      }
      for (const n of fs.readdirSync(repoLabs)) {
        if (n === 'vadd' || !fs.existsSync(path.join(repoLabs, n, 'lab.json'))) continue;
        if (!fs.existsSync(path.join(repoRubrics, n + '.json'))) continue;
        copyDir(path.join(repoLabs, n), path.join(this.labsDir, n));
        fs.copyFileSync(path.join(repoRubrics, n + '.json'), path.join(this.rubricsDir, n + '.json'));
      }
    }
    copyDir(path.join(FIXTURES, 'labs', 'vadd'), path.join(this.labsDir, 'vadd'));
    fs.copyFileSync(path.join(FIXTURES, 'rubrics', 'vadd.json'), path.join(this.rubricsDir, 'vadd.json'));
  }

  cli(args) {
    return execFileSync(BINARY, args, { cwd: this.dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30000 });
  }

  async start() {
    if (!fs.existsSync(BINARY)) throw new Error(`no server binary at ${BINARY}: build it with make BUILD=... ${BINARY}`);
    // The repo's labs are nicer to look at; a broken one must not stop the
    // page tests, so fall back to the fixture lab alone.
    for (const withRepo of this.useRepoLabs ? [true, false] : [false]) {
      this.installLabs(withRepo);
      fs.rmSync(this.db, { force: true });
      let out;
      try {
        out = this.cli(['init', '--db', this.db]);
      } catch (e) {
        out = (e.stdout || '') + (e.stderr || '');
        throw new Error('cugrade-server init failed:\n' + out);
      }
      const m = [...out.matchAll(TOKEN_RE)].find((x) => x[1] === 'a');
      if (!m) throw new Error('init printed no admin token:\n' + out);
      this.tok.admin = m[0];
      if (await this.serve()) break;
      if (!withRepo) throw new Error('cugrade-server did not start:\n' + this.logTail());
    }
    await this.addUsers(this.users);
    return this;
  }

  async serve() {
    for (let attempt = 0; attempt < 3; attempt++) {
      this.port = await freePort();
      this.url = `http://127.0.0.1:${this.port}`;
      const fd = fs.openSync(this.log, 'a');
      this.proc = spawn(BINARY, ['serve', '--db', this.db, '--listen', `127.0.0.1:${this.port}`,
        '--labs', this.labsDir, '--rubrics', this.rubricsDir],
      { cwd: this.dir, stdio: ['ignore', fd, fd] });
      fs.closeSync(fd);
      let exited = false;
      this.proc.on('exit', () => { exited = true; });
      const deadline = Date.now() + 15000;
      while (Date.now() < deadline && !exited) {
        try {
          const r = await fetch(this.url + '/healthz');
          if (r.status === 200) return true;
        } catch (e) { /* not listening yet */ }
        await sleep(50);
      }
      this.stop();
    }
    return false;
  }

  async addUsers(users) {
    const r = await this.api('POST', '/api/admin/users', 'admin',
      { users: users.map(([name, role, display_name]) => ({ name, role, display_name })) });
    if (r.status !== 201) throw new Error(`POST /api/admin/users answered ${r.status}: ${r.text}`);
    for (const u of r.json.users) this.tok[u.name] = u.token;
    for (const [name, , d] of users) this.names[name] = d;
  }

  /* One API request with a Bearer token (a token or a user name). Returns
   * {status, headers, text, json}. body: object (JSON), string or Buffer. */
  async api(method, p, who, body, headers = {}) {
    const h = { ...headers };
    if (who) h.Authorization = 'Bearer ' + (this.tok[who] || who);
    let data = body;
    if (body !== undefined && body !== null && typeof body === 'object' && !Buffer.isBuffer(body)) {
      data = JSON.stringify(body);
      h['Content-Type'] = h['Content-Type'] || 'application/json';
    }
    const res = await fetch(this.url + p, { method, headers: h, body: data, redirect: 'manual' });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch (e) { /* not JSON */ }
    return { status: res.status, headers: res.headers, text, json };
  }

  async submission(id) {
    const r = await this.api('GET', `/api/submissions/${id}`, 'admin');
    return r.json;
  }

  async waitStatus(id, statuses, ms = 10000) {
    const want = [].concat(statuses);
    const deadline = Date.now() + ms;
    let s = null;
    while (Date.now() < deadline) {
      s = await this.submission(id);
      if (s && want.includes(s.status)) return s;
      await sleep(100);
    }
    return s;
  }

  logTail(n = 30) {
    try {
      return fs.readFileSync(this.log, 'utf8').split('\n').slice(-n).join('\n');
    } catch (e) {
      return '(no log)';
    }
  }

  stop() {
    if (this.proc && this.proc.exitCode === null) {
      try { this.proc.kill('SIGTERM'); } catch (e) { /* gone */ }
    }
  }

  async close() {
    if (this.proc && this.proc.exitCode === null) {
      const p = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      await Promise.race([p, sleep(5000)]);
      if (this.proc.exitCode === null) this.proc.kill('SIGKILL');
    }
    if (process.env.KEEP === '1') console.log(`# kept ${this.dir}`);
    else fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

Server.DEFAULT_USERS = [
  ['alice', 'student', 'Alice Quartermaine'],
  ['bob', 'student', 'Bob Zebulon'],
  ['carol', 'student', 'Carol Young'],
  ['tina', 'ta', 'Tina Teaching'],
  ['adam', 'admin', 'Adam Admin'],
  ['runner1', 'runner', 'runner one'],
];

/* --------------------------------------------------------------- runner */

/* A result document per docs/api.md; opts override parts of it. */
function resultDoc(job, opts = {}) {
  const score = opts.score !== undefined ? opts.score : 72.5;
  const status = opts.status || 'graded';
  const doc = {
    score, max_score: 100,
    output: opts.output || `Graded: ${score}/100.`,
    tests: [
      { name: 'correctness: small', score: Math.min(score, 10), max_score: 10, status: 'passed', output: 'max abs err 0', visibility: 'visible' },
      { name: 'hidden: big', score: Math.max(0, score - 10), max_score: 90, status: 'passed', output: 'SECRET-HIDDEN-OUTPUT', visibility: 'hidden' },
    ],
    cugrade: {
      lab: job.lab, rubric_version: job.rubric_version, gpu: 'NVIDIA H100 80GB HBM3 (fake)',
      compile_log: opts.compile_log || '',
      cases: [
        { name: 'small', passed: true, max_abs_err: 0, max_rel_err: 0, first_bad_index: null, unwritten: 0, message: '' },
        { name: 'big', passed: true, max_abs_err: 1e-7, max_rel_err: 2e-7, first_bad_index: null, unwritten: 0, message: '' },
      ],
      sanitizer: opts.sanitizer || [{ tool: 'memcheck', clean: true, findings: [] }, { tool: 'racecheck', clean: true, findings: [] }],
      timing: status === 'graded' ? {
        student_ms: opts.student_ms || 1.23, reference_ms: { naive: 9.1, optimized: 1.5 }, cublas_ms: 0.9, cpu_ms: null,
        speedup: opts.speedup !== undefined ? opts.speedup : 1.37, metric: 'ratio_to_cublas', metric_value: 1.37,
        bandwidth_gbs: null, gflops: 1234.5, samples: 41, rel_err: 0.004, flagged: false, flag_reason: null,
      } : null,
      hints: opts.hints || [],
    },
  };
  if (opts.cases) doc.cugrade.cases = opts.cases;
  return doc;
}

class Runner {
  constructor(server, who = 'runner1', name = 'fake-gpu0') {
    this.s = server;
    this.who = who;
    this.name = name;
  }
  async claim(wait = 0) {
    const r = await this.s.api('POST', '/api/runner/claim', this.who, { runner: this.name, gpu: 'NVIDIA H100 80GB HBM3 (fake)', wait });
    if (r.status === 204) return null;
    if (r.status !== 200 || !r.json || !r.json.job) throw new Error(`claim answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r.json.job;
  }
  /* Claim until the job with this submission id comes (others are graded with
   * a default result so they do not block the queue). */
  async claimId(id, wait = 5) {
    for (let i = 0; i < 50; i++) {
      const job = await this.claim(wait);
      if (!job) continue;
      if (job.id === id) return job;
      await this.result(job, 'graded', resultDoc(job));
    }
    throw new Error(`job ${id} never came`);
  }
  async progress(job, phase, detail = '') {
    const r = await this.s.api('POST', `/api/runner/jobs/${job.id}/progress`, this.who, { phase, detail, runner: this.name, attempt: job.attempt });
    if (r.status !== 200) throw new Error(`progress answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r;
  }
  async result(job, status, doc) {
    const r = await this.s.api('POST', `/api/runner/jobs/${job.id}/result`, this.who, { status, runner: this.name, attempt: job.attempt, result: doc });
    if (r.status !== 200) throw new Error(`result answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r;
  }
}

/* -------------------------------------------------------------- browser */

async function browser() {
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/* A new context + page that records dialogs (alert/confirm/prompt) and
 * page errors, so XSS tests can assert that nothing ran. */
async function newPage(b, opts = {}) {
  /* UTC unless a test asks for a zone: app.js shows dates in the browser's. */
  const ctx = await b.newContext({ viewport: { width: 1200, height: 860 }, timezoneId: 'UTC', ...opts });
  const page = await ctx.newPage();
  page.dialogs = [];
  page.errors = [];
  page.cspViolations = [];
  page.on('dialog', (d) => { page.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) page.cspViolations.push(m.text()); });
  page.setDefaultTimeout(10000);
  return page;
}

async function signIn(page, server, who) {
  await page.goto(server.url + '/login');
  await page.fill('input[name=token]', server.tok[who] || who);
  await Promise.all([page.waitForNavigation(), page.click('form#login button[type=submit]')]);
}

async function shot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}

/* A distinct, valid CUDA source. */
function kernel(tag = '') {
  return `// vadd: c = a + b ${tag}
__global__ void vadd_kernel(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void vadd(const float* a, const float* b, float* c, int n)
{
    vadd_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
`;
}

/* Submit through the API as a user; returns the new submission id. */
async function submitApi(server, who, lab, source, filename = 'kernel.cu') {
  const r = await server.api('POST', `/api/labs/${lab}/submissions?filename=${encodeURIComponent(filename)}`, who,
    Buffer.from(source), { 'Content-Type': 'application/octet-stream' });
  if (r.status !== 202) throw new Error(`submit answered ${r.status}: ${r.text}`);
  return r.json.id;
}

/* Run main(t) with a fresh Tap; exit with its status. */
function run(main) {
  const t = new Tap();
  const watchdog = setTimeout(() => {
    t.ok(false, 'suite finished within 240 s');
    process.exit(t.done() || 1);
  }, 240000);
  main(t).catch((e) => t.ok(false, `suite ran without an exception (${e && e.message})`,
    (e && e.stack) + (t.server ? '\nserver log tail:\n' + t.server.logTail() : '')))
    .finally(() => {
      clearTimeout(watchdog);
      process.exitCode = t.done();
    });
}

module.exports = { Tap, Server, Runner, resultDoc, browser, newPage, signIn, shot, kernel, submitApi, run, sleep, ROOT, BUILD, SHOTS };
