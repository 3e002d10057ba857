#!/usr/bin/python3
"""Kubernetes' node path: kubelet's CRI calls to a real containerd that runs pods in sentry.

kubelet reaches a node's runtime only through the CRI gRPC API (runtime.v1
RuntimeService and ImageService on containerd's socket), and containerd's CRI
plugin picks the runtime by the RunPodSandbox request's runtime_handler, which
kubelet fills in from the pod's RuntimeClass. This test starts a private
containerd with its CRI plugin and a runtime `sentry` configured exactly as the
README tells users (io.containerd.runc.v2 with options.BinaryName = sentry),
imports an image built from the host's files, and makes kubelet's calls for a
pod with runtimeClassName: sentry: RunPodSandbox, CreateContainer,
StartContainer, the container's log file, ContainerStatus, ExecSync,
StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox; then checks
that nothing is left behind. The same pod under runc (handler "runc") gives
the same logs, exit codes and exec results.

The pod sandbox ("pause") container runs under the handler too: its image is
the same layer as the workload's with `sleep infinity` as its entrypoint.
The main pod has a pod network, as a cluster's pods do: containerd makes the
pod's network namespace and runs a CNI plugin the test writes, which gives it
an eth0 (a veth pair kept inside that namespace) and POD_IP, and nothing on
the host's network. The annotations pod uses the node's network
(hostNetwork, NamespaceMode NODE). The namespace a pod's containers name
(the pause's /proc/PID/ns/net) is the pod's under runc and under sentry
(README, "Networks: the engine's namespace"); the guest's processes have
one of their own under sentry, with only lo.

usage: cri_test.py SENTRY MAKE_ROOTFS_SH ROOTFS_DIR   (exit 77: skipped)

With SENTRY_REQUIRE_ENGINES=1 (scripts/test.sh, after installing the
packages) what would be a skip, or a comparison left out for want of runc,
is a failure: ctest counts a skip as a pass.
"""
import glob
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

SKIP = 77
CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE = "sentry.test/rootfs:1"
PAUSE = "sentry.test/pause:1"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
# The runtimes' state (--root) of the CRI's namespace: sentry's is the
# README's options.Root, runc's the runc v2 shim's default.
SENTRY_ROOT = "/run/containerd/sentry"
STATE = {"sentry": SENTRY_ROOT + "/k8s.io", "runc": "/run/containerd/runc/k8s.io"}

SENTRY, MAKE_ROOTFS, ROOTFS = (sys.argv[1:4] + [None] * 3)[:3]
SENTRY = SENTRY and os.path.abspath(SENTRY)
del sys.argv[1:4]


REQUIRE_ENGINES = os.environ.get("SENTRY_REQUIRE_ENGINES") == "1"


def skip(why):
    if REQUIRE_ENGINES:
        print(f"FAIL: {why} (SENTRY_REQUIRE_ENGINES=1: it must run)")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(SKIP)


try:
    import grpc
    from grpc_tools import protoc
except ImportError:
    skip("python3-grpcio and python3-grpc-tools are not installed (scripts/test.sh installs them)")


def compile_proto(out):
    """The test's subset of the CRI API (cri_api.proto) as Python modules in out."""
    os.makedirs(out)
    proto = os.path.join(HERE, "cri_api.proto")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{HERE}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", proto])
    if rc != 0:
        raise RuntimeError(f"protoc failed on {proto}")
    sys.path.insert(0, out)
    import cri_api_pb2
    import cri_api_pb2_grpc
    return cri_api_pb2, cri_api_pb2_grpc


def blob(blobs, data):
    """Stores data under blobs/sha256 and returns its OCI descriptor's digest and size."""
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def image_archive(rootfs, path):
    """An OCI image layout tarball at path holding two images that share one
    layer (the rootfs): IMAGE (a shell) and PAUSE (`sleep infinity`)."""
    layout = path + ".d"
    blobs = os.path.join(layout, "blobs", "sha256")
    os.makedirs(blobs)
    # The shell and coreutils are all the pods run: python3 stays out (a
    # layer of 8 MB, not 70, unpacked and removed in a fraction of the time).
    layer = subprocess.run(["tar", "-C", rootfs, "--numeric-owner", "--exclude=./.complete",
                            "--exclude=./usr/lib/python3*", "--exclude=./usr/bin/python3*",
                            "-cf", "-", "."], check=True, capture_output=True).stdout
    layer_desc = dict(blob(blobs, layer), mediaType="application/vnd.oci.image.layer.v1.tar")
    manifests = []
    for name, entrypoint in ((IMAGE, ["/bin/sh"]), (PAUSE, ["/bin/sleep", "infinity"])):
        config = {
            "architecture": ARCH, "os": "linux",
            "config": {"Env": ["PATH=/usr/bin:/bin"], "Entrypoint": entrypoint,
                       "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        }
        config_desc = dict(blob(blobs, json.dumps(config).encode()),
                           mediaType="application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        desc = dict(blob(blobs, json.dumps(manifest).encode()),
                    mediaType="application/vnd.oci.image.manifest.v1+json",
                    platform={"architecture": ARCH, "os": "linux"},
                    annotations={"io.containerd.image.name": name,
                                 "org.opencontainers.image.ref.name": name.split(":")[1]})
        manifests.append(desc)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": manifests}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    subprocess.run(["tar", "-C", layout, "-cf", path, "."], check=True)
    shutil.rmtree(layout)


def containerd_config(d):
    # The [...runtimes.sentry] table is the README's snippet; the rest makes
    # the instance private (its own root, state and sockets) and fit for a
    # host without AppArmor or CAP_SYS_RESOURCE.
    return f"""version = 2
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "{d}/containerd.sock"
[ttrpc]
  address = "{d}/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{d}/cni-bin"
    conf_dir = "{d}/cni-conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sentry]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["dev.sentry.timeout", "dev.sentry.max-output"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sentry.options]
        BinaryName = "{SENTRY}"
        Root = "{SENTRY_ROOT}"
"""


# The pod network: a CNI plugin that gives the pod's own network namespace
# an eth0 with POD_IP (one end of a veth pair whose other end stays in that
# namespace too), and nothing on the host's network.
POD_IP = "10.88.0.2"
CNI_PLUGIN = f"""#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
case "$CNI_COMMAND" in
VERSION) echo '{{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}}' ;;
ADD)
  cat >/dev/null
  nsenter --net="$CNI_NETNS" sh -c "ip link add $CNI_IFNAME type veth peer name peer0 &&
    ip addr add {POD_IP}/24 dev $CNI_IFNAME && ip link set peer0 up &&
    ip link set $CNI_IFNAME up" >&2 || exit 1
  printf '{{"cniVersion":"0.4.0","interfaces":[{{"name":"%s","sandbox":"%s"}}],'\
'"ips":[{{"version":"4","address":"{POD_IP}/24","interface":0}}]}}\n' "$CNI_IFNAME" "$CNI_NETNS" ;;
*) cat >/dev/null ;;
esac
"""
CNI_CONF = {"cniVersion": "0.4.0", "name": "sentry-test", "plugins": [{"type": "sentry-test-net"}]}


class Node:
    """A private containerd with its CRI plugin, and a CRI client on its socket."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sentry-cri-", dir="/tmp")  # short socket paths
        os.chmod(self.dir, 0o755)
        self.proc = None

    def start(self):
        d = self.dir
        with open(f"{d}/config.toml", "w") as f:
            f.write(containerd_config(d))
        os.makedirs(f"{d}/cni-bin")
        os.makedirs(f"{d}/cni-conf")
        with open(f"{d}/cni-bin/sentry-test-net", "w") as f:
            f.write(CNI_PLUGIN)
        os.chmod(f"{d}/cni-bin/sentry-test-net", 0o755)
        # containerd adds a loopback network of its own, with this plugin.
        os.symlink("/usr/lib/cni/loopback", f"{d}/cni-bin/loopback")
        with open(f"{d}/cni-conf/10-sentry-test.conflist", "w") as f:
            json.dump(CNI_CONF, f)
        self.log = open(f"{d}/containerd.log", "w")
        # Its shims find runc on PATH.
        env = dict(os.environ, PATH=os.environ.get("PATH") or "/usr/sbin:/usr/bin:/sbin:/bin")
        self.proc = subprocess.Popen([CONTAINERD, "--config", f"{d}/config.toml"],
                                     stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        for _ in range(200):
            r = self.ctr("plugins", "ls", check=False)
            if r.returncode == 0:
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("containerd did not start: " + self.containerd_log())
        cri = [l for l in r.stdout.splitlines() if "io.containerd.grpc.v1" in l and " cri " in l]
        if not cri or not cri[0].split()[-1] == "ok":
            skip("containerd's CRI plugin did not start here: " + (cri[0] if cri else "absent")
                 + "\n" + self.containerd_log())

    def ctr(self, *args, check=True):
        return subprocess.run([CTR, "--address", f"{self.dir}/containerd.sock", "-n", "k8s.io",
                               *args], capture_output=True, text=True, timeout=120, check=check)

    def containerd_log(self, tail=4000):
        with open(f"{self.dir}/containerd.log") as f:
            text = f.read()
        return text[-tail:] if tail else text

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        # Snapshots are overlay mounts under the root; none must stay, but a
        # failed run may leave some: unmount before removing.
        for m in mounts_under(self.dir):
            subprocess.run(["umount", "-l", m], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if l.split()[4].startswith(path)]


def processes_with(needle):
    found = []
    for p in glob.glob("/proc/[0-9]*"):
        try:
            with open(p + "/cmdline", "rb") as f:
                cmd = f.read()
            with open(p + "/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle.encode() in cmd and state not in "ZX" and int(p[6:]) != os.getpid():
            found.append(int(p[6:]))
    return found


def descendants(pid):
    children = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.split("/")[2]))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def net_namespace(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def sentry_cgroups(pid):
    """The cgroups the sentry with that host pid made for its sandbox: sentry-PID
    under its own cgroup of each v1 controller (sentry/run/cgroups.cc), read
    while it lives. Only these: a glob for sentry-PID over the whole hierarchy
    also finds what a run under another parent cgroup left, whose pid this
    monitor reused (pid_max may be 32768)."""
    found = []
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            d = f"/sys/fs/cgroup/{c}{path.rstrip('/')}/sentry-{pid}"
            if c in ("memory", "pids", "cpu", "cpuacct") and os.path.isdir(d):
                found.append(d)
    return found


def cgroup_tasks(d):
    """What is in a cgroup, for a failure's message: each task's pid, state and command."""
    try:
        with open(d + "/tasks") as f:
            tids = f.read().split()
    except OSError as e:
        return str(e)
    out = []
    for t in tids:
        try:
            with open(f"/proc/{t}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "?"
        command = cmdline(t).replace(b"\0", b" ").decode(errors="replace").strip()
        out.append(f"{t} {state} {command[:200]}")
    return out or "no task"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


NODE = None
API = None
RUNTIME = None
IMAGES = None


class Pod:
    """One pod's life as kubelet drives it, under a runtime handler."""

    def __init__(self, handler, name, annotations=None, host_network=False):
        self.logs = os.path.join(NODE.dir, "pods", f"{name}-{handler}")
        os.makedirs(self.logs)
        self.config = API.PodSandboxConfig(
            metadata=API.PodSandboxMetadata(name=name, uid=f"uid-{name}-{handler}",
                                            namespace="default", attempt=0),
            # As kubelet: a hostname for a pod of its own network, none with hostNetwork.
            hostname="" if host_network else name,
            log_directory=self.logs,
            labels={"io.kubernetes.pod.name": name}, annotations=annotations or {},
            linux=API.LinuxPodSandboxConfig(security_context=API.LinuxSandboxSecurityContext(
                namespace_options=API.NamespaceOption(
                    network=API.NODE if host_network else API.POD, pid=API.CONTAINER,
                    ipc=API.POD))))
        r = RUNTIME.RunPodSandbox(API.RunPodSandboxRequest(config=self.config,
                                                           runtime_handler=handler), timeout=60)
        self.id = r.pod_sandbox_id
        self.containers = []

    def status(self):
        return RUNTIME.PodSandboxStatus(API.PodSandboxStatusRequest(pod_sandbox_id=self.id,
                                                                    verbose=True), timeout=10)

    def create(self, name, command, **config):
        c = API.ContainerConfig(metadata=API.ContainerMetadata(name=name),
                                image=API.ImageSpec(image=IMAGE), command=command,
                                log_path=f"{name}/0.log", **config)
        os.makedirs(os.path.join(self.logs, name), exist_ok=True)
        cid = RUNTIME.CreateContainer(API.CreateContainerRequest(
            pod_sandbox_id=self.id, config=c, sandbox_config=self.config), timeout=60).container_id
        self.containers.append(cid)
        return cid

    def run(self, name, command, **config):
        cid = self.create(name, command, **config)
        RUNTIME.StartContainer(API.StartContainerRequest(container_id=cid), timeout=60)
        return cid

    def container(self, cid):
        return RUNTIME.ContainerStatus(API.ContainerStatusRequest(container_id=cid, verbose=True),
                                       timeout=10)

    def wait_exited(self, cid, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            s = self.container(cid).status
            if s.state == API.CONTAINER_EXITED:
                return s
            time.sleep(0.05)
        raise AssertionError(f"{cid} did not exit in {seconds} s: {self.container(cid)}")

    def log_lines(self, name, count):
        """The CRI log file's lines as (stream, text): `TIME STREAM F TEXT`,
        once it has count of them (containerd may copy the last ones after
        it reports the exit), or after 10 s."""
        deadline = time.time() + 10
        while True:
            with open(os.path.join(self.logs, name, "0.log")) as f:
                lines = [tuple(l.rstrip("\n").split(" ", 3)[1::2]) for l in f]
            if len(lines) >= count or time.time() > deadline:
                return lines
            time.sleep(0.05)

    def exec_sync(self, cid, cmd, timeout=10):
        return RUNTIME.ExecSync(API.ExecSyncRequest(container_id=cid, cmd=cmd, timeout=timeout),
                                timeout=timeout + 20)

    def remove(self):
        for cid in self.containers:
            RUNTIME.StopContainer(API.StopContainerRequest(container_id=cid, timeout=2),
                                  timeout=30)
            RUNTIME.RemoveContainer(API.RemoveContainerRequest(container_id=cid), timeout=30)
        RUNTIME.StopPodSandbox(API.StopPodSandboxRequest(pod_sandbox_id=self.id), timeout=30)
        RUNTIME.RemovePodSandbox(API.RemovePodSandboxRequest(pod_sandbox_id=self.id), timeout=30)


JOB = ["/bin/sh", "-c", "echo hello from $GREETING; pwd; hostname; cat /proc/version; "
       "echo to stderr >&2; exit 3"]
SERVER = ["/bin/sh", "-c", "echo ready > /tmp/ready; exec sleep 1000"]


class Kubelet(unittest.TestCase):
    """kubelet's calls for one pod, under sentry and then under runc."""

    def lifecycle(self, handler):
        t0 = time.time()
        pod = Pod(handler, "web")
        status = pod.status()
        self.assertEqual(status.status.state, API.SANDBOX_READY)
        self.assertEqual(status.status.runtime_handler, handler)
        self.assertEqual(status.status.network.ip, POD_IP)  # kubelet's pod IP, from CNI
        info = json.loads(status.info["info"])
        pids = [info["pid"]]
        cgroups = sentry_cgroups(pids[0])
        netns = [n["path"] for n in info["runtimeSpec"]["linux"]["namespaces"]
                 if n["type"] == "network"]
        self.assertEqual(len(netns), 1, info["runtimeSpec"]["linux"]["namespaces"])
        self.assertTrue(netns[0].startswith(os.path.join(NODE.dir, "state")), netns)
        pod_net = f"net:[{os.stat(netns[0]).st_ino}]"

        job = pod.run("job", JOB, working_dir="/tmp",
                      envs=[API.KeyValue(key="GREETING", value="the pod")])
        s = pod.wait_exited(job)
        out = {"job_exit": s.exit_code, "job_reason": s.reason,
               "job_log": pod.log_lines("job", 5)}

        server = pod.run("server", SERVER)
        s = pod.container(server)
        self.assertEqual(s.status.state, API.CONTAINER_RUNNING, s)
        pids.append(json.loads(s.info["info"])["pid"])
        cgroups += sentry_cgroups(pids[-1])
        # A container's config.json names the pause container's pid's network
        # namespace (/proc/PID/ns/net): under runc the pod's; under sentry
        # that pid is the pause's monitor, which joined the pod's too.
        spec = json.loads(s.info["info"])["runtimeSpec"]["linux"]["namespaces"]
        self.assertIn({"type": "network", "path": f"/proc/{pids[0]}/ns/net"}, spec)
        host_net = net_namespace(os.getpid())
        out["named_netns"] = {pod_net: "the pod's", host_net: "the host's"}.get(
            net_namespace(pids[0]), "another")
        # The network namespace the server's guest process is in: never the
        # host's (the pod has a network of its own).
        sleeps = []
        for _ in range(100):
            sleeps = [c for c in [pids[-1], *descendants(pids[-1])]  # runc's: the process itself
                      if cmdline(c) == b"sleep\x001000\x00"]
            if sleeps:
                break
            time.sleep(0.05)
        self.assertEqual(len(sleeps), 1, "the server's sleep: its task's pid or beneath it")
        guest_net = net_namespace(sleeps[0])
        self.assertNotEqual(guest_net, host_net)
        out["guest_netns"] = "the pod's" if guest_net == pod_net else "its own"
        # containerd keeps each bundle root's alone: the rootfs inside is
        # reached without an unprivileged user searching the path to it.
        bundle = os.path.join(NODE.dir, "state", "io.containerd.runtime.v2.task", "k8s.io",
                              server)
        out["bundle_mode"] = oct(os.stat(bundle).st_mode & 0o777)
        # The guest's write is in place before the exec that reads it.
        for _ in range(100):
            e = pod.exec_sync(server, ["/bin/cat", "/tmp/ready"])
            if e.exit_code == 0:
                break
            time.sleep(0.05)
        out["exec_cat"] = (e.exit_code, e.stdout, e.stderr)
        e = pod.exec_sync(server, ["/bin/sh", "-c", "echo out; echo err >&2; exit 7"])
        out["exec_exit"] = (e.exit_code, e.stdout, e.stderr)
        ids = [pod.id, job, server]
        listed = RUNTIME.ListContainers(API.ListContainersRequest(
            filter=API.ContainerFilter(pod_sandbox_id=pod.id)), timeout=10).containers
        out["listed"] = sorted((c.metadata.name, c.state) for c in listed)

        RUNTIME.StopContainer(API.StopContainerRequest(container_id=server, timeout=2), timeout=30)
        s = pod.container(server).status
        out["server_stopped"] = (s.state, s.exit_code, s.reason)
        pod.remove()
        self.assertEqual(list(RUNTIME.ListContainers(API.ListContainersRequest(), timeout=10)
                              .containers), [])
        self.assertEqual(list(RUNTIME.ListPodSandbox(API.ListPodSandboxRequest(), timeout=10)
                              .items), [])
        out["seconds"] = time.time() - t0
        out["cgroups"] = cgroups
        return out, ids, pids

    def assert_nothing_left(self, handler, ids, pids, cgroups=()):
        # The shims exit a moment after the sandbox is removed.
        deadline = time.time() + 10
        while time.time() < deadline and any(processes_with(i) for i in ids):
            time.sleep(0.05)
        for i in ids:
            self.assertEqual(processes_with(i), [], i)
            self.assertFalse(os.path.exists(os.path.join(STATE[handler], i)), i)
            self.assertFalse(os.path.exists(os.path.join(NODE.dir, "state",
                                                         "io.containerd.runtime.v2.task",
                                                         "k8s.io", i)), i)
        for p in pids:
            self.assertFalse(alive(p), p)
        # Each monitor removes its cgroups before it exits.
        left = {d: cgroup_tasks(d) for d in cgroups if os.path.isdir(d)}
        self.assertEqual(left, {}, "a sentry cgroup left behind, and what is in it")
        self.assertEqual(mounts_under(os.path.join(NODE.dir, "state")), [])
        self.assertEqual([m for m in mounts_under("/") if any(i in m for i in ids)], [])

    def test_a_pod_under_sentry_and_the_same_under_runc(self):
        got, ids, pids = self.lifecycle("sentry")
        print(f"sentry pod: {got['seconds']:.2f} s; its guest in {got['guest_netns']} "
              f"network namespace; its containers' config.json names {got['named_netns']}",
              file=sys.stderr)
        # Allowed connections of a pod's containers leave from the pod's
        # network, never the host's: the namespace they name is the pod's.
        self.assertEqual(got["named_netns"], "the pod's")
        # The job: its exit code, reason, env, working dir and both streams
        # in the CRI log file; /proc/version is sentry's.
        self.assertEqual(got["job_exit"], 3)
        self.assertEqual(got["job_reason"], "Error")
        log = got["job_log"]
        self.assertIn(("stdout", "hello from the pod"), log)
        self.assertIn(("stdout", "/tmp"), log)
        self.assertIn(("stdout", "web"), log)  # the pod's hostname
        self.assertIn(("stderr", "to stderr"), log)
        version = [t for s, t in log if t.startswith("Linux version")]
        self.assertEqual(len(version), 1, log)
        self.assertIn("(sandbox)", version[0])
        # ExecSync into the running container sees its writes and returns
        # its output and exit code.
        self.assertEqual(got["exec_cat"], (0, b"ready\n", b""))
        self.assertEqual(got["exec_exit"], (7, b"out\n", b"err\n"))
        self.assertEqual(got["bundle_mode"], "0o700")
        self.assertEqual(got["listed"], [("job", API.CONTAINER_EXITED),
                                         ("server", API.CONTAINER_RUNNING)])
        # StopContainer: SIGTERM ends `sleep` (128+15).
        self.assertEqual(got["server_stopped"], (API.CONTAINER_EXITED, 143, "Error"))
        # As root, each monitor has cgroups (memory and pids at least: the
        # defaults cap both), and the check below looks where they are.
        self.assertGreaterEqual(len(got["cgroups"]), 4, got["cgroups"])
        self.assert_nothing_left("sentry", ids, pids, got["cgroups"])

        if shutil.which("runc") is None:
            if REQUIRE_ENGINES:
                self.fail("runc is not installed (SENTRY_REQUIRE_ENGINES=1): "
                          "nothing to compare with")
            print("runc is not installed: the same pod under runc is not compared",
                  file=sys.stderr)
            return
        ref, ids, pids = self.lifecycle("runc")
        print(f"runc pod: {ref['seconds']:.2f} s", file=sys.stderr)
        self.assertEqual(ref["guest_netns"], "the pod's")
        self.assertEqual(ref["named_netns"], "the pod's")
        for k in ("job_exit", "job_reason", "exec_cat", "exec_exit", "listed", "server_stopped",
                  "bundle_mode"):
            self.assertEqual(got[k], ref[k], k)
        # Each stream's lines in order (containerd copies the two pipes
        # apart, so their interleaving in the file varies), but the kernel's.
        def streams(log):
            return {s: [t for stream, t in log if stream == s and not t.startswith("Linux ")]
                    for s in ("stdout", "stderr")}
        self.assertEqual(streams(got["job_log"]), streams(ref["job_log"]))
        self.assert_nothing_left("runc", ids, pids)

    def test_pod_annotations_reach_sentry_only_when_listed(self):
        # dev.sentry.timeout is in the runtime's pod_annotations, so it reaches
        # config.json and ends the container (124, as `sentry run --timeout`);
        # dev.sentry.network is not, so a pod's author cannot open the network.
        pod = Pod("sentry", "timed", {"dev.sentry.timeout": "4", "dev.sentry.network": "allow"},
                  host_network=True)
        pids = [json.loads(pod.status().info["info"])["pid"]]
        cgroups = sentry_cgroups(pids[0])
        t0 = time.time()
        job = pod.run("job", ["/bin/sleep", "60"])
        s = pod.container(job)
        pids.append(json.loads(s.info["info"])["pid"])
        cgroups += sentry_cgroups(pids[-1])
        spec = json.loads(s.info["info"])["runtimeSpec"]["annotations"]
        self.assertEqual(spec.get("dev.sentry.timeout"), "4")
        self.assertNotIn("dev.sentry.network", spec)
        s = pod.wait_exited(job, 30)
        self.assertEqual(s.exit_code, 124)
        self.assertLess(time.time() - t0, 20)
        # The pause container has the same annotation: the pod ends with it.
        for _ in range(200):
            if pod.status().status.state == API.SANDBOX_NOTREADY:
                break
            time.sleep(0.05)
        self.assertEqual(pod.status().status.state, API.SANDBOX_NOTREADY)
        ids = [pod.id, job]
        pod.remove()
        self.assert_nothing_left("sentry", ids, pids, cgroups)

    def test_pods_started_at_once_all_run_and_leave_nothing(self):
        # kubelet starts a node's pods in parallel: 8 at once, each a pause
        # and a job, all under sentry.
        n = 8
        results = [None] * n

        def one(i):
            try:
                pod = Pod("sentry", f"many{i}")
                pid = json.loads(pod.status().info["info"])["pid"]
                cgroups = sentry_cgroups(pid)
                job = pod.run("job", ["/bin/sh", "-c", f"echo pod {i}; exit {i}"])
                s = pod.wait_exited(job, 60)
                log = pod.log_lines("job", 1)
                pod.remove()
                results[i] = (s.exit_code, log, [pod.id, job], pid, cgroups)
            except Exception as e:  # reported below, with the pod's number
                results[i] = e

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{n} pods at once: {time.time() - t0:.2f} s", file=sys.stderr)
        for i, r in enumerate(results):
            self.assertIsInstance(r, tuple, f"pod {i}: {r}")
            self.assertEqual(r[:2], (i, [("stdout", f"pod {i}")]))
        self.assertTrue(all(r[4] for r in results), [r[4] for r in results])
        self.assert_nothing_left("sentry", [x for r in results for x in r[2]],
                                 [r[3] for r in results], [d for r in results for d in r[4]])


def remove_every_pod():
    try:
        for pod in RUNTIME.ListPodSandbox(API.ListPodSandboxRequest(), timeout=10).items:
            RUNTIME.StopPodSandbox(API.StopPodSandboxRequest(pod_sandbox_id=pod.id), timeout=30)
            RUNTIME.RemovePodSandbox(API.RemovePodSandboxRequest(pod_sandbox_id=pod.id),
                                     timeout=30)
    except grpc.RpcError as e:
        print(f"cleanup: {e}", file=sys.stderr)


def main():
    global NODE, API, RUNTIME, IMAGES
    if not SENTRY or not os.access(SENTRY, os.X_OK):
        skip(f"usage: {sys.argv[0]} SENTRY MAKE_ROOTFS_SH ROOTFS_DIR")
    if not (os.access(CONTAINERD, os.X_OK) and os.access(CTR, os.X_OK)):
        skip("containerd or ctr is not installed")
    if os.geteuid() != 0:
        skip("containerd's CRI plugin needs root")
    for tool, package in (("/usr/lib/cni/loopback", "containernetworking-plugins"),
                          ("/usr/bin/nsenter", "util-linux")):
        if not os.access(tool, os.X_OK):
            skip(f"{tool} is missing: install {package} (scripts/test.sh does)")
    if not any(os.access(d + "/ip", os.X_OK) for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")):
        skip("ip is missing: install iproute2 (scripts/test.sh does)")
    t0 = time.time()

    def mark(what):
        print(f"{what}: {time.time() - t0:.2f} s", file=sys.stderr)

    subprocess.run(["/bin/sh", MAKE_ROOTFS, ROOTFS], check=True, timeout=300)
    NODE = Node()
    try:
        API, grpc_api = compile_proto(os.path.join(NODE.dir, "proto"))
        mark("rootfs and protoc")
        NODE.start()
        mark("containerd up")
        image_archive(ROOTFS, os.path.join(NODE.dir, "images.tar"))
        mark("image archive")
        NODE.ctr("images", "import", "--all-platforms", os.path.join(NODE.dir, "images.tar"))
        mark("image imported")
        channel = grpc.insecure_channel(f"unix://{NODE.dir}/containerd.sock")
        RUNTIME = grpc_api.RuntimeServiceStub(channel)
        IMAGES = grpc_api.ImageServiceStub(channel)
        v = RUNTIME.Version(API.VersionRequest(version="v1"), timeout=10)
        print(f"CRI: {v.runtime_name} {v.runtime_version} api {v.runtime_api_version}",
              file=sys.stderr)
        # kubelet asks for the image before it pulls one (no registry here).
        for name in (IMAGE, PAUSE):
            if not IMAGES.ImageStatus(API.ImageStatusRequest(image=API.ImageSpec(image=name)),
                                      timeout=10).image.id:
                raise RuntimeError(f"{name} not imported: " + NODE.ctr("images", "ls").stdout)
        result = unittest.main(exit=False, verbosity=2).result
        ok = result.wasSuccessful()
        if not ok or os.environ.get("CRI_TEST_LOG"):
            print(NODE.containerd_log(None if ok else 4000), file=sys.stderr)
    finally:
        if RUNTIME:
            remove_every_pod()  # after a failure: no shim or sentry outlives the test
        NODE.stop()
        mark("containerd stopped")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
