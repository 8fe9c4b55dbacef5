"""What the guest boots from: the host's Debian packages, a busybox initramfs built at test time.

The guest is Debian's own kernel (package linux-image-amd64), not one built for the harness, so
the agent meets the cgroup v2, PSI and memcg code that nodes run. Nothing of the guest's root is
built either: the initramfs (busybox-static and a handful of the kernel package's modules) mounts
the host's root read-only over virtio-9p, lays a tmpfs overlay on top and switches root to the
host's own systemd. What a session adds to that root (the harness's units, the masks that keep
systemd from walking the shared tree, a Python prefix outside /root) is a directory tree the host
writes with Python (`write_overlay_tree`) and the initramfs copies over the new root, so the
initramfs stays generic and cacheable (keyed on the kernel, busybox and init script it holds).

The modules come from the kernel package and are ordered from its modules.dep (a module after
everything it depends on), so a kernel whose 9p needs netfs and fscache, or whose virtio is split
differently, is followed rather than contradicted by a hard-coded list.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]  # the repository, kept at its path in the guest even under /tmp
INIT_SCRIPT = HERE / "guest_init.sh"
RUNNER_SCRIPT = HERE / "guest_runner.py"
KAPI_SCRIPT = HERE / "guest_kapi.py"
KUBELET_SCRIPT = HERE / "guest_kubelet.py"

# What the initramfs must load before the root can be mounted and the channel opened; their
# dependencies come from modules.dep. virtio_console is the virtio-serial port of the channel.
ROOT_MODULES = ("virtio_pci", "virtio_console", "9pnet_virtio", "9p", "overlay")

# The Debian packages the harness uses, and the one command that installs them.
PACKAGES = ("qemu-system-x86", "linux-image-amd64", "busybox-static", "systemd")
QEMU = "qemu-system-x86_64"
SYSTEMD_CANDIDATES = (Path("/lib/systemd/systemd"), Path("/usr/lib/systemd/systemd"))
BUSYBOX_CANDIDATES = (Path("/bin/busybox"), Path("/usr/bin/busybox"))


class ImageError(RuntimeError):
    """The host lacks something the guest needs; the message names the package to install."""


@dataclasses.dataclass(frozen=True)
class Kernel:
    version: str
    image: Path
    modules: Path

    @property
    def modules_dep(self) -> Path:
        return self.modules / "modules.dep"


def is_static_elf(path: Path) -> bool:
    """True for an ELF executable without a program interpreter (PT_INTERP): it runs alone."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return False
            endian = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack_from(endian + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(endian + "HH", head, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    pt_interp = 3
    return all(
        struct.unpack_from(endian + "I", table, i * phentsize)[0] != pt_interp for i in range(phnum)
    )


def find_busybox() -> Path | None:
    for path in BUSYBOX_CANDIDATES:
        if is_static_elf(path):
            return path
    return None


def find_systemd() -> Path | None:
    return next((p for p in SYSTEMD_CANDIDATES if os.access(p, os.X_OK)), None)


def _version_key(version: str) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in re.split(r"[.-]", version)]


def find_kernel(
    boot: Path = Path("/boot"), lib_modules: Path = Path("/lib/modules")
) -> Kernel | None:
    """The newest readable kernel whose modules are installed ($NODE_KERNEL: that version)."""
    wanted = os.environ.get("NODE_KERNEL")
    found: list[Kernel] = []
    for image in boot.glob("vmlinuz-*"):
        version = image.name.removeprefix("vmlinuz-")
        if wanted and version != wanted:
            continue
        modules = lib_modules / version
        if os.access(image, os.R_OK) and (modules / "modules.dep").is_file():
            found.append(Kernel(version, image, modules))
    return max(found, key=lambda k: _version_key(k.version), default=None)


def missing_packages() -> list[str]:
    """The Debian packages whose files the harness needs and does not find on this host."""
    missing = []
    if shutil.which(QEMU) is None:
        missing.append("qemu-system-x86")
    if find_kernel() is None:
        missing.append("linux-image-amd64")
    if find_busybox() is None:
        missing.append("busybox-static")
    if find_systemd() is None:
        missing.append("systemd")
    return missing


def install_hint(missing: Iterable[str]) -> str:
    """The one line that says what is absent and how to get it."""
    names = " ".join(missing)
    return (
        f"guest-kernel tests need the Debian packages {names}: "
        f"apt-get install --no-install-recommends {names} (or run `make test-node` as root)"
    )


def module_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    base = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base)
    return base.replace("-", "_")


def module_load_order(modules_dep: str, wanted: Iterable[str], builtin: str = "") -> list[str]:
    """Module paths (relative to the modules directory), each after all it depends on.

    modules.dep lines are `path: dep dep ...`; depmod already lists the transitive dependencies,
    but the order is followed by walking them rather than trusting their position. A wanted
    module built into the kernel (modules.builtin) needs no loading; one that is neither is an
    error here rather than a guest that cannot mount its root.
    """
    built_in = {module_name(line) for line in builtin.split()}
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in modules_dep.splitlines():
        if ":" not in line:
            continue
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
        by_name[module_name(path)] = path
    order: list[str] = []
    visiting: set[str] = set()

    def visit(path: str) -> None:
        if path in order:
            return
        if path in visiting:
            raise ImageError(f"modules.dep: dependency cycle through {path}")
        visiting.add(path)
        for dep in deps.get(path, []):
            visit(dep)
        visiting.discard(path)
        order.append(path)

    for name in wanted:
        found = by_name.get(name.replace("-", "_"))
        if found is not None:
            visit(found)
        elif name.replace("-", "_") not in built_in:
            raise ImageError(f"kernel module {name} is neither in modules.dep nor built in")
    return order


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix in (".zst", ".gz"):
        raise ImageError(f"{path}: compressed modules other than .xz are not supported")
    return data


class Cpio:
    """A newc ("070701") archive, the format the kernel unpacks as initramfs."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.ino = 1

    def add(self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)) -> None:
        encoded = name.encode() + b"\0"
        fields = (self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(encoded), 0)
        self.ino += 1
        header = b"070701" + b"".join(b"%08X" % v for v in fields)
        self.parts.append(header + encoded + b"\0" * (-(len(header) + len(encoded)) % 4))
        self.parts.append(data + b"\0" * (-len(data) % 4))

    def dir(self, name: str) -> None:
        self.add(name, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, perm: int = 0o644) -> None:
        self.add(name, stat.S_IFREG | perm, data)

    def symlink(self, name: str, target: str) -> None:
        self.add(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self) -> bytes:
        self.add("TRAILER!!!", 0)
        return b"".join(self.parts)


def _initramfs_parts(kernel: Kernel, busybox: Path) -> Iterator[tuple[str, bytes]]:
    """(name, content) of everything the cache key covers, in archive order."""
    yield "init", INIT_SCRIPT.read_bytes()
    yield "bin/busybox", busybox.read_bytes()
    builtin = kernel.modules / "modules.builtin"
    order = module_load_order(
        kernel.modules_dep.read_text(),
        ROOT_MODULES,
        builtin.read_text() if builtin.is_file() else "",
    )
    yield "modules.order", "".join(f"{module_name(p)}.ko\n" for p in order).encode()
    for rel in order:
        yield f"modules/{module_name(rel)}.ko", _module_bytes(kernel.modules / rel)


def build_initramfs(cache: Path, kernel: Kernel) -> Path:
    """The initramfs for `kernel`, built once into `cache` and reused while its inputs are equal."""
    busybox = find_busybox()
    if busybox is None:
        raise ImageError(install_hint(["busybox-static"]))
    parts = list(_initramfs_parts(kernel, busybox))
    digest = hashlib.sha256()
    for name, data in parts:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    target = cache / f"initramfs-{kernel.version}-{digest.hexdigest()[:16]}.cpio"
    if target.is_file():
        return target
    archive = Cpio()
    for d in ("bin", "dev", "proc", "sys", "modules", "lower", "rw", "newroot"):
        archive.dir(d)
    archive.add("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
    for name, data in parts:
        archive.file(name, data, 0o755 if name in ("init", "bin/busybox") else 0o644)
    archive.symlink("bin/sh", "busybox")
    cache.mkdir(parents=True, exist_ok=True)
    week_ago = time.time() - 7 * 86400
    for old in cache.glob("initramfs-*.cpio"):
        with contextlib.suppress(OSError):
            if old.stat().st_mtime < week_ago:
                old.unlink()
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(archive.finish())
    tmp.replace(target)
    return target


# --- the session's additions to the guest root -------------------------------------------------

GUEST_OPT = "/opt/harness"
GUEST_PYTHON_PREFIX = f"{GUEST_OPT}/python"
GUEST_VENV = f"{GUEST_OPT}/venv"
TARGET = "harness.target"
RUNNER_UNIT = "harness-runner.service"

# Units of the boot transaction that stay: the journal (the agent's lines are checked there).
# Everything else the host's targets want is masked: it would walk the shared tree
# (systemd-tmpfiles-setup), touch host state (timers, sysusers, random seed) or wait for
# hardware the guest lacks.
KEEP_UNITS = frozenset(
    {
        "systemd-journald.service",
        "systemd-journald.socket",
        "systemd-journald-dev-log.socket",
    }
)
# Targets whose host-side .wants the guest does not follow.
BOOT_TARGETS = (
    "sysinit.target",
    "basic.target",
    "sockets.target",
    "timers.target",
    "paths.target",
    "local-fs.target",
    "local-fs-pre.target",
    "remote-fs.target",
    "cryptsetup.target",
    "integritysetup.target",
    "veritysetup.target",
    "slices.target",
)
ALWAYS_MASK = (
    "systemd-tmpfiles-setup.service",
    "systemd-tmpfiles-setup-dev.service",
    "systemd-tmpfiles-clean.timer",
    "systemd-tmpfiles-clean.service",
    "systemd-remount-fs.service",
    "systemd-firstboot.service",
    "systemd-journal-flush.service",
    "systemd-update-utmp.service",
    "systemd-update-done.service",
    "ldconfig.service",
    "systemd-hwdb-update.service",
    "systemd-journal-catalog-update.service",
    "systemd-networkd-wait-online.service",
    "systemd-logind.service",
    "getty.target",
    "serial-getty@ttyS0.service",
)
UNIT_DIRS = (
    Path("/etc/systemd/system"),
    Path("/run/systemd/system"),
    Path("/lib/systemd/system"),
    Path("/usr/lib/systemd/system"),
)


def units_to_mask(unit_dirs: Iterable[Path] = UNIT_DIRS) -> list[str]:
    """Every unit the host's boot targets pull in, but the ones the guest keeps."""
    names: set[str] = set(ALWAYS_MASK)
    for d in unit_dirs:
        for target in BOOT_TARGETS:
            for wants in ("wants", "requires"):
                sub = d / f"{target}.{wants}"
                if sub.is_dir():
                    names.update(p.name for p in sub.iterdir())
    return sorted(names - KEEP_UNITS)


HARNESS_TARGET = """\
[Unit]
Description=Guest-kernel test harness (tests/node): journald and the command channel
Requires=basic.target {runner}
After=basic.target {runner}
AllowIsolate=yes
"""

RUNNER_SERVICE = """\
[Unit]
Description=Command channel of the guest-kernel test harness (virtio-serial)
After=basic.target

[Service]
Type=simple
Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
Environment=HOME=/root
Environment=HARNESS_VENV={venv}
ExecStart={python} -I -S {opt}/runner.py
StandardOutput=journal+console
StandardError=journal+console
"""


def _venv_site(python_version: tuple[int, int]) -> str:
    return f"lib/python{python_version[0]}.{python_version[1]}/site-packages"


def write_overlay_tree(root: Path, *, host_venv: Path | None = None) -> Path:
    """Write what the session adds to the guest's root into `root`; return the bind list file.

    The tree holds: the harness's target and runner unit, masks for what the host's boot
    targets would start, the runner script, and a venv at /opt/harness/venv whose interpreter is
    this host's Python prefix bind-mounted at /opt/harness/python (the init script reads
    etc/harness/binds). The prefix is moved because units with ProtectHome= (the shipped
    eviction-agent.service) cannot reach an interpreter under /root or /home, as pyenv installs
    it; the venv's site-packages points at the host venv's (`host_venv`, default sys.prefix),
    so the project and its dependencies are the host's, as installed.
    """
    if root.exists():
        shutil.rmtree(root)
    units = root / "etc/systemd/system"
    units.mkdir(parents=True)
    for name in units_to_mask():
        (units / name).symlink_to("/dev/null")
    opt = root / GUEST_OPT.lstrip("/")
    opt.mkdir(parents=True)
    shutil.copy(RUNNER_SCRIPT, opt / "runner.py")
    shutil.copy(KAPI_SCRIPT, opt / "kapi.py")
    shutil.copy(KUBELET_SCRIPT, opt / "kubelet.py")
    version = sys.version_info[:2]
    guest_python = f"{GUEST_PYTHON_PREFIX}/bin/python{version[0]}.{version[1]}"
    (units / TARGET).write_text(HARNESS_TARGET.format(runner=RUNNER_UNIT))
    (units / RUNNER_UNIT).write_text(
        RUNNER_SERVICE.format(python=guest_python, opt=GUEST_OPT, venv=GUEST_VENV)
    )

    venv = host_venv or Path(sys.prefix)
    host_site = venv / _venv_site(version)
    guest_venv = root / GUEST_VENV.lstrip("/")
    (guest_venv / "bin").mkdir(parents=True)
    (guest_venv / "bin/python").symlink_to(guest_python)
    (guest_venv / "bin/python3").symlink_to("python")
    (guest_venv / "pyvenv.cfg").write_text(
        f"home = {GUEST_PYTHON_PREFIX}/bin\ninclude-system-site-packages = false\n"
        f"version = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    site = guest_venv / _venv_site(version)
    site.mkdir(parents=True)
    # addsitedir, not a bare path: the host venv's own .pth files (the editable install) run
    (site / "harness-host-venv.pth").write_text(
        f"import site; site.addsitedir({str(host_site)!r})\n"
    )
    # The entry points, as an install outside /root would have them. LD_LIBRARY_PATH: an
    # interpreter built with --enable-shared (pyenv) finds libpython by a RUNPATH under /root,
    # which ProtectHome= (the unit) and uid 65534 (the DaemonSet) cannot reach; the loader
    # would then take the system's libpython of another patch release.
    for script, module in (("eviction-agent", "agent"), ("kubesim", "kubesim")):
        path = guest_venv / "bin" / script
        path.write_text(
            "#!/bin/sh\n"
            f"export LD_LIBRARY_PATH={GUEST_PYTHON_PREFIX}/lib"
            "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n"
            f'exec {GUEST_VENV}/bin/python -m {module} "$@"\n'
        )
        path.chmod(0o755)

    binds = root / "etc/harness/binds"
    binds.parent.mkdir(parents=True)
    binds.write_text(f"{Path(sys.base_prefix).resolve()} {GUEST_PYTHON_PREFIX}\n")
    (root / GUEST_PYTHON_PREFIX.lstrip("/")).mkdir(parents=True)
    return binds


def ensure_packages() -> int:
    """`make test-node`'s first step: install what is missing as root (1 if that fails); else
    say in one line what is missing (0: pytest then skips the guest's tests with that reason)."""
    missing = missing_packages()
    if not missing:
        return 0
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        print(f"test-node: the guest's tests are skipped: {install_hint(missing)}", file=sys.stderr)
        return 0
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"installing {' '.join(missing)} (apt-get)", file=sys.stderr)
    for argv in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-q", "-y", "--no-install-recommends", *missing],
    ):
        if subprocess.run(argv, env=env, check=False).returncode != 0:
            print(f"{' '.join(argv)} failed; {install_hint(missing)}", file=sys.stderr)
            return 1
    still = missing_packages()
    if still:
        print(f"installed, yet still missing: {install_hint(still)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(ensure_packages())
