#!/usr/bin/env python3
"""deploy/k8s: no schema validator is packaged in Debian 12 (kubeconform,
kubeval, kubectl are not; `apt-cache search kube` offers libraries only), so
this is a YAML parse (python3-yaml) and a structural check of what
docs/deploy.md promises: the kustomization lists every file; the server is
one replica, Recreate, its database on a PVC, ready on /healthz, non-root;
runners ask for one GPU each, are not privileged, add SYS_ADMIN and nothing
like it beyond the list, and mount the token read-only. Never applied to a
cluster here. TAP."""
import os, sys
ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
K = os.path.join(ROOT, "deploy/k8s")
fails = 0


def ok(c, name, d=""):
    global fails
    print(("ok" if c else "not ok") + " - " + name)
    if not c:
        fails += 1
        print("#   %s" % str(d)[:500])


try:
    import yaml
except ImportError:
    ok(False, "python3-yaml is installed (sh deploy/install-deps.sh test)")
    sys.exit(1)

docs = {}
for f in sorted(os.listdir(K)):
    with open(os.path.join(K, f)) as fh:
        try:
            docs[f] = [d for d in yaml.safe_load_all(fh) if d]
            ok(True, "%s parses as YAML" % f)
        except yaml.YAMLError as e:
            ok(False, "%s parses as YAML" % f, e)
            docs[f] = []
objs = [d for f, ds in docs.items() if f != "kustomization.yaml" for d in ds]
ok(all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name")
       for d in objs), "every object has apiVersion, kind and metadata.name")
kz = (docs.get("kustomization.yaml") or [{}])[0]
ok(sorted(kz.get("resources", [])) == sorted(f for f in docs if f != "kustomization.yaml"),
   "the kustomization lists every manifest", kz.get("resources"))
by = {(d["kind"], d["metadata"]["name"]): d for d in objs}
srv = by.get(("Deployment", "cugrade-server"), {})
ss = srv.get("spec", {})
pod = ss.get("template", {}).get("spec", {})
c = (pod.get("containers") or [{}])[0]
ok(ss.get("replicas") == 1 and ss.get("strategy", {}).get("type") == "Recreate",
   "server: one replica, Recreate (never two writers)", ss.get("replicas"))
ok(ss.get("selector", {}).get("matchLabels") == ss.get("template", {}).get("metadata", {}).get("labels"),
   "server: the selector matches the pod's labels")
vols = {v["name"]: v for v in pod.get("volumes", [])}
dbm = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/var/lib/cugrade"]
claim = vols.get(dbm[0]["name"], {}).get("persistentVolumeClaim", {}).get("claimName") if dbm else None
ok(claim and ("PersistentVolumeClaim", claim) in by and "/var/lib/cugrade/cugrade.db" in c.get("command", []),
   "server: the database file is on the PVC", claim)
rp = c.get("readinessProbe", {}).get("httpGet", {})
ok(rp.get("path") == "/healthz" and rp.get("port") in ("http", 8080), "server: readiness probe on /healthz", rp)
ok(pod.get("securityContext", {}).get("runAsNonRoot") is True and
   c.get("securityContext", {}).get("capabilities", {}).get("drop") == ["ALL"],
   "server: non-root, no capabilities")
svc = by.get(("Service", "cugrade-server"), {})
ok(svc.get("spec", {}).get("selector") == ss.get("template", {}).get("metadata", {}).get("labels"),
   "the server's Service selects its pod")
run = by.get(("Deployment", "cugrade-runner"), {})
rpod = run.get("spec", {}).get("template", {}).get("spec", {})
rc = (rpod.get("containers") or [{}])[0]
sc = rc.get("securityContext", {})
ok(rc.get("resources", {}).get("limits", {}).get("nvidia.com/gpu") == 1, "runner: one GPU per pod")
ok(sc.get("privileged") is False and "ALL" in sc.get("capabilities", {}).get("drop", []) and
   "SYS_ADMIN" in sc.get("capabilities", {}).get("add", []) and
   not {"SYS_MODULE", "SYS_RAWIO", "NET_ADMIN", "SYS_PTRACE", "SYS_BOOT"} & set(sc.get("capabilities", {}).get("add", [])),
   "runner: not privileged; drops ALL, adds SYS_ADMIN and no module/rawio/net/ptrace capability", sc)
ok(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "runner: the runtime's seccomp profile stays on")
tm = [m for m in rc.get("volumeMounts", []) if m["mountPath"] == "/etc/cugrade"]
ok(tm and tm[0].get("readOnly") is True and rpod.get("automountServiceAccountToken") is False,
   "runner: token mounted read-only, no service account token")
sys.exit(1 if fails else 0)
