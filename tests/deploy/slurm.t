#!/usr/bin/env python3
# suite: quiet  (tests/run.sh: two runners time the fake lab's naive baseline in
# a 12 s limit; beside other suites on a 2-core host it timed out: 25/35. A
# starved compile would be a system_error the server retries, and
# `attempts == 2` below would no longer hold: the runners, started by sbatch
# with this suite's environment, compile at the CUGRADE_COMPILE_NICE
# tests/run.sh sets, 0)
"""Slurm for real: a one-node cluster on localhost (munged, slurmctld, slurmd,
a count-only `gpu` GRES), the real cugrade-server, and deploy/slurm's runner
script submitted as an array job, unchanged, the way an admin submits it:
parameterized by the environment (CUGRADE_SERVER, CUGRADE_TOKEN_FILE,
CUGRADE_HOME, CUGRADE_ARCH) and by sbatch options that override its #SBATCH
lines (a 2-core box has no 4 CPUs and 32 GB per task).

Checks: the runners register (/metrics and the admin queue page list them by
name), claim and grade jobs of a CPU-only lab (tests/runner/fakelab); a runner
cancelled with scancel in the middle of a job loses its lease and the other
runner grades the job (attempt 2); `scontrol requeue` (allowed by the
script's --requeue) brings the cancelled runner back under the same name and
it grades again. Every daemon is stopped on exit, also on failure. TAP."""
import json, os, re, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from cugrade_test import Tap, Server, ROOT, BUILD  # noqa: E402

FAKE = os.path.join(ROOT, "tests/runner/fakelab")
sys.path.insert(0, FAKE)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
SBATCH = os.path.join(ROOT, "deploy/slurm/cugrade-runner.sbatch")
LEASE = 3
GOOD = b'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'
HANG = b'extern "C" void fill(float* o, int n) { volatile int x = 1; while (x) { } }\n'

t = Tap()
if os.geteuid() != 0 or not os.path.exists("/usr/local/cuda/bin/nvcc"):
    t.skip("slurm runners grade jobs", "needs root (the sandbox) and nvcc (the fake lab's build)")
    t.exit()
missing = [b for b in ("munged", "slurmctld", "slurmd", "sbatch", "scancel", "scontrol", "sinfo")
           if not shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
if missing:
    t.ok(False, "Slurm and munge are installed (sh deploy/install-deps.sh test)", "missing: %s" % missing)
    t.exit()

tmp = tempfile.mkdtemp(prefix="cugrade-slurm-")
os.chmod(tmp, 0o755)
daemons = []            # (name, Popen)
env = dict(os.environ)
env["PATH"] = env.get("PATH", "") + ":/usr/sbin:/sbin"
env["SLURM_CONF"] = os.path.join(tmp, "slurm.conf")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def sh(*argv, check=True, timeout=30):
    p = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s exited %d: %s%s" % (" ".join(argv), p.returncode, p.stdout, p.stderr))
    return p


def wait_for(what, fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.3)
    raise RuntimeError("timed out (%ds) waiting for %s" % (timeout, what))


def log_tail(name, n=20):
    try:
        return "".join(open(os.path.join(tmp, name), errors="replace").readlines()[-n:])
    except OSError:
        return "(no %s)" % name


def start_cluster():
    """munged on its own socket and key, slurmctld and slurmd in the
    foreground as our children, all state under tmp."""
    key = os.path.join(tmp, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = os.path.join(tmp, "munge.sock")
    daemons.append(("munged", subprocess.Popen(
        ["munged", "-F", "-f", "--socket=" + sock, "--key-file=" + key,
         "--log-file=" + os.path.join(tmp, "munged.log"), "--pid-file=" + os.path.join(tmp, "munged.pid"),
         "--seed-file=" + os.path.join(tmp, "munged.seed")],
        env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "munged.err"), "w"))))
    wait_for("munged's socket", lambda: os.path.exists(sock), 15)
    host = socket.gethostname().split(".")[0]
    for d in ("spool", "state"):
        os.makedirs(os.path.join(tmp, d))
    # The scheduler's passes every second (defaults: 30 s backfill, 60 s
    # main loop): a requeued task starts within seconds, not at the next
    # pass (12-21 s each on the CI host).
    with open(os.path.join(tmp, "slurm.conf"), "w") as f:
        f.write(f"""ClusterName=cugradeci
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock},cred_expire=5
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=300
GresTypes=gpu
NodeName=cgnode NodeHostname={host} NodeAddr=127.0.0.1 CPUs={max(2, os.cpu_count() or 2)} RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=cgnode Default=YES MaxTime=INFINITE State=UP
""")
    # Two stand-in device files: Slurm hands one to each job (it checks
    # that they exist, not what they are); the runner never opens them.
    for i in (0, 1):
        open(os.path.join(tmp, "fakegpu%d" % i), "w").close()
    with open(os.path.join(tmp, "gres.conf"), "w") as f:
        f.write("AutoDetect=off\nNodeName=cgnode Name=gpu File=%s/fakegpu[0-1]\n" % tmp)
    daemons.append(("slurmctld", subprocess.Popen(["slurmctld", "-D", "-i"], env=env,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    daemons.append(("slurmd", subprocess.Popen(["slurmd", "-D", "-N", "cgnode"], env=env,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    wait_for("the node to be idle", lambda: sh("sinfo", "-h", "-n", "cgnode", "-o", "%t",
                                               check=False).stdout.strip() == "idle", 60)


def stop_cluster():
    """scancel everything, then the daemons (TERM, then KILL), children too."""
    try:
        sh("scancel", "--partition=gpu", check=False, timeout=10)
    except Exception:  # noqa: BLE001
        pass
    for name, p in reversed(daemons):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    # Runners that Slurm could not reach (slurmd gone first): ours by path.
    out = subprocess.run(["pgrep", "-f", os.path.join(tmp, "home/dist/cugrade-runner")],
                         capture_output=True, text=True).stdout.split()
    for pid in out:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass

    # A runner killed in the middle of a job leaves its job's size-capped
    # tmpfs mounted (the runner cleans up on SIGTERM, not on SIGKILL).
    for line in open("/proc/mounts").read().splitlines():
        mnt = line.split()[1]
        if mnt.startswith(tmp + "/"):
            subprocess.run(["umount", "-l", mnt], capture_output=True)

def runner_home():
    """CUGRADE_HOME as an admin unpacks it: dist/ (deploy/dist.sh, the
    recipe of `make dist`), labs/ and rubrics/ -- here the CPU-only fake lab."""
    home = tree.lay_out(os.path.join(tmp, "home"))
    sh("sh", os.path.join(ROOT, "deploy/dist.sh"), BUILD, os.path.join(home, "dist"), timeout=120)
    return home


def metrics(s):
    return s.get("/metrics", token=s.tok["admin"]).body.decode(errors="replace")


def done_by(s):
    """runner name -> jobs done, from /metrics."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'cugrade_runner_jobs_done_total\{runner="([^"]+)"\} (\d+)', metrics(s))}


def submit(s, who, src):
    r = s.post("/api/labs/fakelab/submissions", token=s.tok[who], body=src)
    if r.status != 202:
        raise RuntimeError("submission refused: %s" % r.brief())
    return r.json()["id"]


def sub(s, sid):
    return s.get("/api/submissions/%d" % sid, token=s.tok["admin"]).json() or {}


def lease(s, sid):
    db = sqlite3.connect("file:%s?mode=ro" % s.db, uri=True, timeout=5)
    try:
        return db.execute("SELECT status, lease_runner, attempts FROM submissions WHERE id=?",
                          (sid,)).fetchone()
    finally:
        db.close()


def tasks():
    """array task -> (slurm job id, state) for our runners."""
    out = sh("squeue", "-h", "-r", "-n", "cugrade-runner", "-o", "%i %A %T", check=False).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and "_" in f[0]:
            res[int(f[0].split("_")[1])] = (f[1], f[2])
    return res


def main(t):
    start_cluster()
    t.ok(True, "a one-node Slurm with a gpu GRES is up (munged, slurmctld, slurmd)")
    home = runner_home()
    students = [("s%d" % i, "student", "Student %d" % i) for i in range(6)]
    s = Server(labs=(), start=False, tap=t, args=["--lease-seconds", str(LEASE)])
    os.makedirs(os.path.join(s.labs_dir, "fakelab"))
    shutil.copy(os.path.join(FAKE, "lab.json"), os.path.join(s.labs_dir, "fakelab/lab.json"))
    shutil.copy(os.path.join(FAKE, "rubric.json"), os.path.join(s.rubrics_dir, "fakelab.json"))
    s.init()
    s.start()
    s.add_users(students + [("slurmrunner", "runner", "Slurm runners")])
    tok = os.path.join(tmp, "runner.token")
    fd = os.open(tok, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, (s.tok["slurmrunner"] + "\n").encode())
    os.close(fd)

    # The admin's submission, on this box: the script's #SBATCH lines stay,
    # site-specific sizes are overridden on the command line.
    senv = dict(env, CUGRADE_SERVER=s.url, CUGRADE_TOKEN_FILE=tok, CUGRADE_HOME=home,
                CUGRADE_ARCH="sm_90", CUGRADE_ROOT=home, TMPDIR=tmp)
    p = subprocess.run(["sbatch", "--parsable", "--array=0-1", "--cpus-per-task=1", "--mem=200M",
                        "--chdir", tmp, "--output", os.path.join(tmp, "runner-%A_%a.log"), SBATCH],
                       env=senv, capture_output=True, text=True, timeout=30)
    t.ok(p.returncode == 0, "sbatch --array=0-1 deploy/slurm/cugrade-runner.sbatch is accepted",
         p.stdout + p.stderr)
    array = p.stdout.strip().split(";")[0]
    host = socket.gethostname().split(".")[0]
    names = ["%s-slurm%s_%d" % (host, array, i) for i in (0, 1)]

    # Both runners start, build the lab and park in a claim: registered.
    try:
        wait_for("both runners in /metrics", lambda: all(
            'runner="%s"' % n in metrics(s) for n in names), 90)
    except RuntimeError as e:
        t.diag(str(e))
    m = metrics(s)
    t.ok(all('cugrade_runner_last_seen_seconds{runner="%s"}' % n in m for n in names),
         "both array tasks register: /metrics lists %s" % ", ".join(names),
         m[-1500:] + log_tail("runner-%s_0.log" % array) + log_tail("slurmd.log"))
    page = s.get("/admin/queue", token=s.tok["admin"])
    html = page.body.decode(errors="replace")
    t.ok(page.status == 200 and all(n in html for n in names),
         "the admin runners page lists both runners", html[-1500:])

    # They claim and grade jobs.
    ids = [submit(s, "s%d" % i, GOOD + b"// %d\n" % i) for i in range(4)]
    try:
        wait_for("4 jobs graded", lambda: all(sub(s, i).get("status") in
                 ("graded", "compile_error", "runtime_error", "timeout", "system_error", "rejected")
                 for i in ids), 120)
    except RuntimeError as e:
        t.diag(str(e))
    st = [sub(s, i) for i in ids]
    t.ok(all(x.get("status") == "graded" and x.get("score") == x.get("max_score") for x in st),
         "the runners grade the fake lab's jobs: 4 graded with full marks",
         json.dumps([{k: x.get(k) for k in ("id", "status", "score", "max_score")} for x in st])
         + log_tail("runner-%s_0.log" % array))
    d = done_by(s)
    t.ok(sum(d.get(n, 0) for n in names) == 4, "/metrics counts the 4 results under the runners' names", d)

    # scancel a runner in the middle of a job. Slurm sends SIGTERM to every
    # process of the job, the grading child too: the runner posts a
    # system_error (never charged) and the job goes back to the queue at
    # once; the other runner grades it as attempt 2.
    hang = submit(s, "s4", HANG)
    holder, other, before = killed_mid_job(t, s, hang, names, array, "scancel")
    x = sub(s, hang)
    after = done_by(s)
    t.ok(x.get("status") == "timeout" and x.get("attempts") == 2 and
         after.get(other, 0) == before.get(other, 0) + 1,
         "after scancel the other runner (%s) grades the job as attempt 2 (the endless loop: timeout)" % other,
         json.dumps({k: x.get(k) for k in ("status", "attempts", "phase", "detail")}) + " %s %s" % (before, after))
    t.ok(tasks().get(names.index(holder)) is None, "the cancelled task left the queue", tasks())

    # --requeue: the admin brings the cancelled runner back, same name.
    back_up(t, s, array, names.index(holder), holder)
    # Stop the other runner: the next job can only go to the one that came back.
    sh("scancel", "%s_%d" % (array, names.index(other)), check=False)
    wait_for("the other runner's task to leave", lambda: tasks().get(names.index(other)) is None, 60)
    last = submit(s, "s5", GOOD + b"// back\n")
    try:
        wait_for("the last job", lambda: sub(s, last).get("status") == "graded", 120)
    except RuntimeError as e:
        t.diag(str(e))
    t.ok(sub(s, last).get("status") == "graded" and done_by(s).get(holder, 0) == after.get(holder, 0) + 1,
         "the runner that came back grades a new job", json.dumps(sub(s, last))[:800])

    # A runner that dies without a word (SIGKILL: a node lost, the OOM
    # killer): nothing is posted, its lease expires after --lease-seconds and
    # the other runner grades the job.
    back_up(t, s, array, names.index(other), other)
    hang = submit(s, "s2", HANG + b"// 2\n")
    holder, other, before = killed_mid_job(t, s, hang, names, array, "kill -9")
    x = sub(s, hang)
    after = done_by(s)
    t.ok(x.get("status") == "timeout" and x.get("attempts") == 2 and
         after.get(other, 0) == before.get(other, 0) + 1 and after.get(holder, 0) == before.get(holder, 0),
         "a runner killed with SIGKILL posts nothing; its lease expires and %s grades the job (attempt 2)" % other,
         json.dumps({k: x.get(k) for k in ("status", "attempts", "phase", "detail")}) + " %s %s" % (before, after))


def killed_mid_job(t, s, sid, names, array, how):
    """Wait until job sid is leased, end the holder (how: "scancel" its
    array task, or "kill -9" its runner process), wait until the job ends; returns (holder, other, jobs done before)."""
    row = wait_for("the job to be claimed", lambda: (lambda r: r if r and r[1] else None)(lease(s, sid)), 60)
    holder = row[1]
    t.ok(holder in names, "job %d is leased by one of the Slurm runners (%s)" % (sid, holder), row)
    task = names.index(holder)
    before = done_by(s)
    if how == "scancel":
        p = sh("scancel", "%s_%d" % (array, task), check=False)
        t.ok(p.returncode == 0, "scancel %s_%d (the holder) is accepted" % (array, task), p.stderr)
    else:
        # (scancel --signal=KILL is a plain cancel to Slurm: TERM first.)
        # Until none is left: the runner forks (a warm child for the next
        # job), and a child forked between a look and the kills would
        # outlive the rest. (A fresh clone's run once counted a result of
        # the holder's after `before`; such a child is one way, not shown
        # to be the one.) A lost node takes them all at once.
        pids = subprocess.run(["pgrep", "-f", "cugrade-runner .*--name %s " % holder],
                              capture_output=True, text=True).stdout.split()
        t.ok(len(pids) >= 1, "the holder's runner processes are found (%s)" % pids)
        for _ in range(40):
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
            pids = subprocess.run(["pgrep", "-f", "cugrade-runner .*--name %s " % holder],
                                  capture_output=True, text=True).stdout.split()
            if not pids:
                break
    try:
        wait_for("the job to end", lambda: sub(s, sid).get("status") in ("timeout", "graded", "system_error"), 90)
    except RuntimeError as e:
        t.diag(str(e))
    return holder, names[1 - task], before


def back_up(t, s, array, task, name):
    """scontrol requeue an ended array task; check it claims again."""
    p = sh("scontrol", "requeue", "%s_%d" % (array, task), check=False)
    t.ok(p.returncode == 0, "scontrol requeue %s_%d is accepted (the script asks for --requeue)"
         % (array, task), p.stdout + p.stderr)
    seen0 = time.time()

    def back():
        m = re.search(r'cugrade_runner_last_seen_seconds\{runner="%s"\} ([0-9.]+)' % re.escape(name),
                      metrics(s))
        return m and float(m.group(1)) > seen0
    try:
        wait_for("the requeued runner to claim again", back, 120)
    except RuntimeError as e:
        t.diag(str(e) + "\n" + sh("squeue", "-r", check=False).stdout)
    t.ok(back(), "the requeued task comes back under the same name (%s) and claims" % name,
         metrics(s)[-1200:] + log_tail("slurmctld.log"))


try:
    t.run(main)
finally:
    stop_cluster()
    if os.environ.get("KEEP") == "1":
        print("# kept " + tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
t.exit()
