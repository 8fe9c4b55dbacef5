"""Pod cgroups made by hand in the guest, named as the kubelet's systemd driver names them.

For checks that need exact control over what the kubelet would have built (a static pod's
32-hex UID, a pod created after the agent, a container holding three processes) the tests lay
out the cgroups themselves with sh lines run in the guest, rather than through a kubesim node:

    kubepods.slice/                                     the node's pods; Guaranteed pods here
    kubepods.slice/kubepods-<qos>.slice/                burstable, besteffort
    .../kubepods-<qos>-pod<uid with _ for ->.slice/     one pod
    .../cri-containerd-<64 hex>.scope/                  one container (containerd's name)

with `+memory +pids` in every parent's cgroup.subtree_control, as the kubelet enables them.
These are the names to expect, written literally here as in the kubelet's code
(pkg/kubelet/cm/cgroup_manager_linux.go), not derived from the agent's parser they check.
"""

from __future__ import annotations

from tests.node import image

CGROUP = "/sys/fs/cgroup"
KUBEPODS = f"{CGROUP}/kubepods.slice"
GUEST_PYTHON = f"{image.GUEST_PYTHON_PREFIX}/bin/python3"
# No quotes: it goes inside a sh -c '...' line. bytes * n writes every page (charged at once).
_HOLD = "b = bytes([120]) * ({mib} << 20); import signal; signal.pause()"


def pod_slice(qos: str | None, uid: str) -> str:
    """The pod cgroup's path (absolute, in the guest); qos None for a Guaranteed pod."""
    uid_ = uid.replace("-", "_")
    if qos is None:
        return f"{KUBEPODS}/kubepods-pod{uid_}.slice"
    return f"{KUBEPODS}/kubepods-{qos}.slice/kubepods-{qos}-pod{uid_}.slice"


def container_scope(pod: str, container_id: str) -> str:
    return f"{pod}/cri-containerd-{container_id}.scope"


def make_kubepods(*, memory_max: str = "max") -> str:
    """A sh line creating kubepods.slice and its QoS slices with the controllers enabled."""
    enable = "echo '+memory +pids' >"
    return " && ".join(
        [
            f"mkdir -p {KUBEPODS}/kubepods-burstable.slice {KUBEPODS}/kubepods-besteffort.slice",
            f"{enable} {CGROUP}/cgroup.subtree_control",
            f"{enable} {KUBEPODS}/cgroup.subtree_control",
            f"{enable} {KUBEPODS}/kubepods-burstable.slice/cgroup.subtree_control",
            f"{enable} {KUBEPODS}/kubepods-besteffort.slice/cgroup.subtree_control",
            f"echo {memory_max} > {KUBEPODS}/memory.max",
        ]
    )


def start_in_scope(scope: str, argv: str, *, memory_max: str = "max", copies: int = 1) -> str:
    """A sh line: the container scope (and its pod) made, `copies` processes of `argv` started
    detached inside it, and a bounded wait until all of them are in. Each process joins the
    scope before exec, so every page it touches is charged there."""
    pod = scope.rsplit("/", 1)[0]
    start = (
        f"setsid sh -c 'echo $$ > {scope}/cgroup.procs && exec {argv}' </dev/null >/dev/null 2>&1 &"
    )
    joined = f'[ "$(wc -l < {scope}/cgroup.procs)" -ge {copies} ]'
    return (
        f"{{ mkdir -p {scope} && echo '+memory +pids' > {pod}/cgroup.subtree_control"
        f" && echo {memory_max} > {scope}/memory.max && {{ {' '.join([start] * copies)} }}"
        f" && for i in $(seq 300); do {joined} && break; sleep 0.1; done && {joined}; }}"
    )


def holder(mib: int) -> str:
    """argv (a sh word list) of a process that holds `mib` MiB resident until killed."""
    return f'{GUEST_PYTHON} -I -S -c "{_HOLD.format(mib=mib)}"'


def wait_for_usage(path: str, at_least: int, *, seconds: int = 120) -> str:
    """A sh line: wait (bounded) until the cgroup's memory.current reaches `at_least` bytes."""
    return (
        f"for i in $(seq {seconds * 5}); do"
        f" test $(cat {path}/memory.current) -ge {at_least} && exit 0; sleep 0.2; done;"
        f" echo {path}: memory.current $(cat {path}/memory.current) below {at_least} >&2; exit 1"
    )


def remove_tree(path: str = KUBEPODS) -> str:
    """A sh line: kill everything under `path` (cgroup.kill) and remove its cgroups, leaves
    first, waiting (bounded) while the kernel still counts the dying tasks."""
    return (
        f"test -d {path} || exit 0; echo 1 > {path}/cgroup.kill;"
        f" for i in $(seq 100); do"
        f" grep -q 'populated 0' {path}/cgroup.events && break; sleep 0.1; done;"
        f" find {path} -depth -type d -exec rmdir {{}} +"
    )
