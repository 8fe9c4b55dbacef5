"""The harness's host side without a VM (runs in `make test`): module order, the initramfs
archive, the static-busybox check, what is masked in the guest, the session's overlay tree."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.node import image


def _dep_file(graph: dict[str, list[str]]) -> str:
    return "".join(
        f"kernel/m/{name}.ko: {' '.join(f'kernel/m/{d}.ko' for d in deps)}\n"
        for name, deps in graph.items()
    )


@st.composite
def dags(draw: st.DrawFn) -> dict[str, list[str]]:
    """Module graphs as depmod writes them: acyclic, each module's transitive deps listed."""
    n = draw(st.integers(1, 12))
    names = [f"mod{i}" for i in range(n)]
    direct = {
        names[i]: draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        for i in range(n)
    }
    closure: dict[str, list[str]] = {}
    for name in names:
        seen: list[str] = []
        stack = list(direct[name])
        while stack:
            dep = stack.pop()
            if dep not in seen:
                seen.append(dep)
                stack.extend(direct[dep])
        closure[name] = draw(st.permutations(seen))
    return closure


@given(dags(), st.data())
def test_every_module_loads_after_all_it_depends_on(
    graph: dict[str, list[str]], data: st.DataObject
) -> None:
    wanted = data.draw(st.lists(st.sampled_from(sorted(graph)), min_size=1, unique=True))
    order = [image.module_name(p) for p in image.module_load_order(_dep_file(graph), wanted)]
    assert len(order) == len(set(order))
    assert set(wanted) <= set(order)
    for i, name in enumerate(order):
        assert set(graph[name]) <= set(order[:i])
    # nothing beyond what was asked for and its dependencies
    assert set(order) == set(wanted).union(*(graph[w] for w in wanted))


def test_module_names_match_with_dashes_or_underscores_and_builtins_need_no_loading() -> None:
    dep = (
        "kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz\nkernel/net/9p/9pnet.ko.xz:\n"
    )
    order = image.module_load_order(
        dep, ["9pnet-virtio", "overlay"], "kernel/fs/overlayfs/overlay.ko\n"
    )
    assert order == ["kernel/net/9p/9pnet.ko.xz", "kernel/net/9p/9pnet_virtio.ko.xz"]
    with pytest.raises(image.ImageError, match="virtio_console is neither"):
        image.module_load_order(dep, ["virtio_console"])


def test_the_installed_kernels_modules_resolve() -> None:
    kernel = image.find_kernel()
    if kernel is None:
        pytest.skip(image.install_hint(["linux-image-amd64"]))
    order = [
        image.module_name(p)
        for p in image.module_load_order(
            kernel.modules_dep.read_text(),
            image.ROOT_MODULES,
            (kernel.modules / "modules.builtin").read_text(),
        )
    ]
    assert order.index("virtio_ring") < order.index("virtio") < order.index("virtio_pci")
    assert order.index("9pnet") < order.index("9pnet_virtio") < order.index("9p")


@pytest.mark.skipif(shutil.which("cpio") is None, reason="no cpio binary to read the archive back")
def test_the_initramfs_archive_is_newc_as_cpio_reads_it(tmp_path: Path) -> None:
    archive = image.Cpio()
    archive.dir("bin")
    archive.file("bin/tool", b"#!/bin/sh\necho odd-length\n", 0o755)
    archive.symlink("bin/sh", "tool")
    archive.add("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
    listing = subprocess.run(
        ["cpio", "-itv", "--quiet"], input=archive.finish(), capture_output=True, check=True
    ).stdout.decode()
    lines = [line.split() for line in listing.splitlines()]
    assert [line[-1] for line in lines] == ["bin", "bin/tool", "tool", "dev/console"]
    assert lines[1][0] == "-rwxr-xr-x" and lines[2][-3:] == ["bin/sh", "->", "tool"]
    assert lines[3][0].startswith("crw") and "5," in lines[3]
    subprocess.run(
        ["cpio", "-id", "--quiet", "bin/tool"], input=archive.finish(), cwd=tmp_path, check=True
    )
    assert (tmp_path / "bin/tool").read_bytes() == b"#!/bin/sh\necho odd-length\n"


def test_busybox_must_be_static(tmp_path: Path) -> None:
    (tmp_path / "text").write_text("#!/bin/sh\n")
    assert not image.is_static_elf(tmp_path / "text")
    assert not image.is_static_elf(Path(sys.executable).resolve())  # dynamically linked
    busybox = image.find_busybox()
    if busybox is not None:
        assert image.is_static_elf(busybox)


def test_what_the_hosts_boot_targets_want_is_masked_but_the_journal(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    for target, unit in [
        ("sysinit.target", "systemd-tmpfiles-setup.service"),
        ("sysinit.target", "systemd-journald.service"),
        ("timers.target", "apt-daily.timer"),
        ("sockets.target", "systemd-journald.socket"),
        ("multi-user.target", "postgresql.service"),
    ]:
        (lib / f"{target}.wants").mkdir(parents=True, exist_ok=True)
        (lib / f"{target}.wants" / unit).touch()
    masked = image.units_to_mask([lib])
    assert {"systemd-tmpfiles-setup.service", "apt-daily.timer"} <= set(masked)
    assert not {"systemd-journald.service", "systemd-journald.socket"} & set(masked)
    # the guest boots harness.target, never multi-user.target: its wants need no mask
    assert "postgresql.service" not in masked


def test_the_overlay_tree_gives_the_guest_a_venv_outside_home(tmp_path: Path) -> None:
    root = tmp_path / "overlay"
    binds = image.write_overlay_tree(root, host_venv=Path(sys.prefix))
    units = root / "etc/systemd/system"
    assert (units / image.TARGET).is_file() and (units / image.RUNNER_UNIT).is_file()
    assert (units / "systemd-tmpfiles-setup.service").readlink() == Path("/dev/null")
    src, dst = binds.read_text().split()
    assert Path(src) == Path(sys.base_prefix).resolve() and dst == image.GUEST_PYTHON_PREFIX
    venv = root / image.GUEST_VENV.lstrip("/")
    assert "home = /opt/harness/python/bin" in (venv / "pyvenv.cfg").read_text()
    assert str(Path(sys.prefix)) in next(venv.glob("lib/python3*/site-packages/*.pth")).read_text()
    assert (
        f"exec {image.GUEST_VENV}/bin/python -m agent " in (venv / "bin/eviction-agent").read_text()
    )


def test_the_install_hint_is_one_line_naming_the_packages() -> None:
    hint = image.install_hint(["qemu-system-x86", "busybox-static"])
    assert "\n" not in hint
    assert "apt-get install --no-install-recommends qemu-system-x86 busybox-static" in hint
