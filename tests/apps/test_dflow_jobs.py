#!/usr/bin/env python3
"""The job service's REST API end to end: `dflow jobs serve` on a free port
over a scratch data root; a short 2-worker counting job on the local
back-end runs to success with its metrics, snapshots and log (also as
server-sent events); a long one is stopped (it saves a snapshot), resumed and
stopped again; a killed worker fails its job with the reason; a node daemon's
heartbeat shows it live, then lost; bad requests are refused with JSON
errors and nothing escapes the data root.

Usage: test_dflow_jobs.py BUILD/apps   (where dflow and dflow-count are)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = sys.argv[1]
DFLOW = os.path.join(BIN, "dflow")
tmp = tempfile.mkdtemp(prefix="dflow-jobs-")
root = os.path.join(tmp, "root")
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what, flush=True)


class Api:
    def __init__(self, port, token):
        self.base = "http://127.0.0.1:%d" % port
        self.token = token

    def call(self, method, path, body=None, token=True, raw=False):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            request.add_header("Authorization", "Bearer " + self.token)
        request.add_header("Content-Type", "application/octet-stream" if isinstance(body, bytes) else "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                content = response.read()
                return response.status, (content if raw else json.loads(content))
        except urllib.error.HTTPError as error:
            content = error.read()
            return error.code, json.loads(content)

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body if body is not None else {}, **kw)


def wait_for(what, condition, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit("FAIL: timed out waiting for " + what)


def job_status(api, job_id):
    return api.get("/api/jobs/%d" % job_id)[1]["status"]


def worker_pid(run_dir, index):
    """The pid of the job's worker `index` (its cluster names it; its argv names the run)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = open("/proc/%s/environ" % pid, "rb").read()
            cmdline = open("/proc/%s/cmdline" % pid, "rb").read()
        except OSError:
            continue
        if b'"type":"worker","index":%d' % index in environ and run_dir.encode() in cmdline:
            return int(pid)
    return None


subprocess.run([os.path.join(BIN, "dflow-count"), "generate", "--out", os.path.join(root, "flowers"),
                "--images", "8", "--width", "72", "--height", "40", "--max-flowers", "6", "--seed", "3"],
               check=True, stdout=subprocess.DEVNULL)
os.makedirs(os.path.join(tmp, "outside"))
service = subprocess.Popen([DFLOW, "jobs", "serve", "--data-root", root, "--port", "0", "--node-timeout", "2"],
                           stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "serve.log"), "w"), text=True)
try:
    port = int(service.stdout.readline().split()[1])
    token = open(os.path.join(root, "jobs.sqlite.token")).read().strip()
    check(oct(os.stat(os.path.join(root, "jobs.sqlite.token")).st_mode & 0o777) == "0o600", "token file mode")
    api = Api(port, token)

    # --- the token
    status, body = api.get("/api/jobs", token=False)
    check(status == 401 and "token" in body["error"], "a call without the token: %s %s" % (status, body))
    wrong = Api(port, "0" * 64)
    check(wrong.get("/api/jobs")[0] == 401, "a wrong token")
    status, page = api.get("/", token=False, raw=True)
    check(status == 200 and b"dflow jobs" in page, "the page is served")
    check(api.get("/static/vue.js", token=False, raw=True)[0] == 200, "Vue from Debian is served")

    # --- datasets
    status, dataset = api.post("/api/datasets", {"name": "flowers", "app": "count", "path": "flowers"})
    check(status == 201 and dataset["path"] == os.path.join(root, "flowers"), "register a dataset: %s" % dataset)
    for body, code, message in [
            ({"name": "flowers", "app": "count", "path": "flowers"}, 409, "exists"),
            ({"name": "etc", "app": "count", "path": "/etc"}, 400, "outside the data root"),
            ({"name": "up", "app": "count", "path": "../outside"}, 400, "outside the data root"),
            ({"name": "a/b", "app": "count", "path": "flowers"}, 400, "letters, digits"),
            ({"name": "x", "app": "cook", "path": "flowers"}, 400, "\"app\" must be one of"),
            ({"name": "x", "app": "count", "path": "nowhere"}, 400, "not a folder")]:
        status, error = api.post("/api/datasets", body)
        check(status == code and message in error.get("error", ""), "dataset %s: %s %s" % (body, status, error))

    # --- a dataset uploaded as an archive
    def archive(members):
        """A .tar.gz of (name, bytes or None for a symlink) members."""
        import io, tarfile
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, data in members:
                info = tarfile.TarInfo(name)
                if data is None:
                    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                    tar.addfile(info)
                else:
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()
    flowers = os.path.join(root, "flowers")
    members = [("flowers/" + os.path.relpath(os.path.join(d, f), flowers), open(os.path.join(d, f), "rb").read())
               for d, _, files in os.walk(flowers) for f in files]
    status, uploaded = api.call("POST", "/api/datasets/upload?name=uploaded&app=count", archive(members))
    check(status == 201 and uploaded["path"] == os.path.join(root, "datasets", "uploaded", "flowers"),
          "upload a dataset: %s %s" % (status, uploaded))
    check(sorted(os.listdir(uploaded["path"])) == sorted(os.listdir(flowers)), "the upload unpacked every file")
    for members, message in [([("../evil.txt", b"x")], "climbs out"), ([("/etc/evil", b"x")], "absolute"),
                             ([("a/link", None)], "links and devices are refused")]:
        status, error = api.call("POST", "/api/datasets/upload?name=bad&app=count", archive(members))
        check(status == 400 and message in error.get("error", ""), "a bad archive: %s %s" % (status, error))
        check(not os.path.exists(os.path.join(root, "datasets", "bad")), "a refused archive left files behind")
    status, error = api.call("POST", "/api/datasets/upload?name=bad&app=count", b"not an archive at all")
    check(status == 400 and "not a readable archive" in error.get("error", ""), "not an archive: %s" % error)

    # --- a short job runs to success
    job = {"name": "short", "app": "count", "dataset_id": dataset["id"], "steps": 6, "batch": 2,
           "checkpoint_every": 2, "workers": 2}
    status, short = api.post("/api/jobs", dict(job, eval_dataset_id=dataset["id"]))
    check(status == 201 and short["status"] == "running", "submit: %s %s" % (status, short))
    wait_for("the short job", lambda: job_status(api, short["id"]) in ("succeeded", "failed"))
    detail = api.get("/api/jobs/%d" % short["id"])[1]
    check(detail["status"] == "succeeded", "the short job: %s" % detail)
    check("--workers" in detail["command"], "the job's command is shown")
    check(detail.get("eval", {}).get("images") == 8 and "mae" in detail["eval"], "eval metrics: %s" % detail)
    metrics = api.get("/api/jobs/%d/metrics" % short["id"])[1]
    check([m["step"] for m in metrics] == [1, 2, 3, 4, 5, 6] and all("loss" in m for m in metrics),
          "metrics of every step: %s" % metrics)
    snapshots = api.get("/api/jobs/%d/snapshots" % short["id"])[1]
    check([s["file"] for s in snapshots] == ["model-2.safetensors", "model-4.safetensors", "model-6.safetensors"],
          "snapshots: %s" % snapshots)
    status, blob = api.get("/api/jobs/%d/snapshots/model-6.safetensors" % short["id"], raw=True)
    check(blob == open(os.path.join(detail["run_dir"], "checkpoints", "model-6.safetensors"), "rb").read(),
          "a snapshot downloads intact")
    status, log = api.get("/api/jobs/%d/log" % short["id"], raw=True)
    check(b"[worker:1] finished at step 6" in log, "the log holds every worker's lines")
    status, events = api.get("/api/jobs/%d/events" % short["id"], raw=True)
    check(b"event: status" in events and b"data: [worker:0]" in events, "server-sent events: %r" % events[:200])
    check(api.get("/api/jobs/%d/snapshots/..%%2Fjobs.sqlite" % short["id"])[0] == 404, "no way out of the run")
    check(api.post("/api/jobs/%d/stop" % short["id"])[0] == 409, "stopping a finished job")

    # --- the mpirun back-end on this machine: the same parameters as the local one
    status, mpi = api.post("/api/jobs", dict(job, name="mpi", backend="mpirun"))
    check(status == 201, "submit to mpirun: %s %s" % (status, mpi))
    wait_for("the mpirun job", lambda: job_status(api, mpi["id"]) in ("succeeded", "failed"))
    detail = api.get("/api/jobs/%d" % mpi["id"])[1]
    check(detail["status"] == "succeeded" and detail["command"][0] == "mpirun", "the mpirun job: %s" % detail)
    check(open(os.path.join(detail["run_dir"], "checkpoints", "model-6.safetensors"), "rb").read() ==
          open(os.path.join(api.get("/api/jobs/%d" % short["id"])[1]["run_dir"], "checkpoints",
                            "model-6.safetensors"), "rb").read(), "mpirun and local jobs end alike")
    check(b"(Open MPI)" in api.get("/api/jobs/%d/log" % mpi["id"], raw=True)[1], "the ranks came from Open MPI")

    # --- a long job: stop (a snapshot is saved), resume, stop again
    status, long_job = api.post("/api/jobs", dict(job, name="long", steps=100000, checkpoint_every=100000))
    wait_for("the long job's first steps", lambda: len(api.get("/api/jobs/%d/metrics" % long_job["id"])[1]) >= 2)
    check(api.post("/api/jobs/%d/stop" % long_job["id"])[0] == 202, "stop")
    wait_for("the long job to stop", lambda: job_status(api, long_job["id"]) != "running")
    detail = api.get("/api/jobs/%d" % long_job["id"])[1]
    check(detail["status"] == "stopped" and detail["reason"] == "stopped on request", "stopped: %s" % detail)
    check(len(api.get("/api/jobs/%d/snapshots" % long_job["id"])[1]) == 1, "the stop saved a snapshot")
    status, resumed = api.post("/api/jobs/%d/resume" % long_job["id"])
    check(status == 202 and resumed["status"] == "running", "resume: %s %s" % (status, resumed))
    wait_for("the resumed job's log", lambda: b"resuming" in api.get("/api/jobs/%d/log" % long_job["id"], raw=True)[1])
    api.post("/api/jobs/%d/stop" % long_job["id"])
    wait_for("the resumed job to stop", lambda: job_status(api, long_job["id"]) == "stopped")

    # --- a worker killed: the job fails with the reason
    status, doomed = api.post("/api/jobs", dict(job, name="doomed", steps=100000, checkpoint_every=100000))
    wait_for("the doomed job's first steps", lambda: len(api.get("/api/jobs/%d/metrics" % doomed["id"])[1]) >= 1)
    victim = wait_for("worker 1's process", lambda: worker_pid(doomed["run_dir"], 1))
    os.kill(victim, signal.SIGKILL)
    wait_for("the doomed job to fail", lambda: job_status(api, doomed["id"]) != "running", seconds=60)
    detail = api.get("/api/jobs/%d" % doomed["id"])[1]
    check(detail["status"] == "failed" and "worker:1" in detail["reason"] and "signal 9" in detail["reason"],
          "a killed worker: %s" % detail)

    # --- nodes
    subprocess.run([DFLOW, "jobs", "node", "--server", api.base, "--token-file",
                    os.path.join(root, "jobs.sqlite.token"), "--name", "node-a", "--beats", "1"], check=True)
    nodes = api.get("/api/nodes")[1]
    check(len(nodes) == 1 and nodes[0]["name"] == "node-a" and nodes[0]["status"] == "live"
          and nodes[0]["info"]["cores"] >= 1 and nodes[0]["info"]["memory_bytes"] > 0, "a node: %s" % nodes)
    time.sleep(2.5)
    check(api.get("/api/nodes")[1][0]["status"] == "lost", "a node without heartbeats is lost")
    check(api.post("/api/nodes", {"name": "n", "cores": -1})[0] == 400, "a bad heartbeat")

    # --- bad requests
    for body, code, message in [
            ({"name": "x", "app": "count", "dataset_id": dataset["id"]}, 400, "missing field \"steps\""),
            (dict(job, steps=0), 400, "\"steps\" must be an integer in 1..10000000"),
            (dict(job, workers=1000), 400, "\"workers\" must be an integer in 1..64"),
            (dict(job, app="detect"), 400, "is for the count app"),
            (dict(job, dataset_id=999), 404, "no dataset 999"),
            (dict(job, eval_dataset_id=999), 404, "no evaluation dataset 999"),
            (dict(job, strategy="star"), 400, "\"strategy\" must be one of ring, ps"),
            (dict(job, backend="yarn"), 400, "\"backend\" must be one of local, mpirun, slurm"),
            (dict(job, ps=2), 400, "\"ps\" goes with strategy ps"),
            (dict(job, model="ssd-mobilenet"), 400, "\"model\" must be one of countnet"),
            (b"{not json", 400, "not valid JSON"),
            (b"[" * 5000, 400, "nest"),
            (b" " * (2 << 20), 400, "larger than"),
            (b"[1, 2]", 400, "must be a JSON object")]:
        status, error = api.post("/api/jobs", body)
        check(status == code and message in error.get("error", ""), "job %s: %s %s" % (repr(body)[:60], status, error))
    check(api.get("/api/jobs/999")[0] == 404, "an unknown job")
    check(api.get("/api/jobs/%d/log?offset=-3" % short["id"])[0] == 400, "a bad log offset")
finally:
    service.send_signal(signal.SIGTERM)
    try:
        code = service.wait(timeout=30)
    except subprocess.TimeoutExpired:
        service.kill()
        code = "a hang"
    check(code == 0, "the service stops on SIGTERM (exit %s)" % code)
    if failures:
        print(open(os.path.join(tmp, "serve.log")).read())

if failures:
    sys.exit("%d check(s) failed; scratch files in %s" % (failures, tmp))
shutil.rmtree(tmp, ignore_errors=True)
print("dflow jobs: all checks passed")
