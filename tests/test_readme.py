"""The README works when pasted: its code blocks run, and its shown output is real.

The repository's tracked files are copied to a temporary directory (a fresh clone, with the
already-built ``.venv`` linked in, as ``make demo`` leaves it) and ``HOME`` points to an empty
directory. Then:

* every ``sh`` block runs in its own ``bash -e`` with ``.venv/bin`` first on ``PATH`` (what
  ``. .venv/bin/activate`` in the first block gives the reader);
* every ``python`` block runs with the venv's interpreter;
* every ``text`` block that follows an ``sh`` block is output: each of its lines (except the
  ``...`` elisions) must appear in what that block printed.

``make test`` and ``make bench`` lines are not run here: this test is part of ``make test``
(CI runs it through ``.ci/run``), and benchmarks are never run by tests. Blocks that call
kubectl are skipped only when no kubectl is installed. Servers a block leaves running
(``--pid-file`` files, the block's process group) are stopped after it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
NOT_RUN = re.compile(r"^make (test|bench)\b.*$", re.MULTILINE)
RUNS_DEMO = re.compile(r"\bmake demo\b|examples/demo\.py")


@dataclass(frozen=True)
class Block:
    index: int
    lang: str
    code: str
    output: str | None  # the ``text`` block that follows, if any


def readme_blocks() -> list[Block]:
    found = BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    blocks = []
    for i, (lang, code) in enumerate(found):
        if lang not in ("sh", "python"):
            continue
        nxt = found[i + 1] if i + 1 < len(found) else None
        output = nxt[1] if nxt is not None and nxt[0] == "text" and lang == "sh" else None
        blocks.append(Block(i, lang, code, output))
    return blocks


BLOCKS = readme_blocks()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    target = tmp_path_factory.mktemp("clone")
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            dst = target / os.fsdecode(name)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (target / ".venv").symlink_to(VENV)
    # As after `make demo`: the venv's stamp is newer than pyproject.toml, so make does not
    # reinstall (which would point the shared venv's editable install at this copy).
    stamp = VENV / ".installed"
    if stamp.exists():
        mtime = stamp.stat().st_mtime - 1
        os.utime(target / "pyproject.toml", (mtime, mtime))
    yield target


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "PYTHON"))}
    env.update(
        HOME=str(home),
        PATH=f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(VENV),
    )
    return env


def _stop_leftovers(cwd: Path, group: int) -> None:
    for pid_file in cwd.glob("*.pid"):
        with contextlib.suppress(ValueError, ProcessLookupError, OSError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)


def _param(block: Block) -> Any:
    """The blocks that run the demo (tens of seconds) are marked `long`: started first."""
    marks = [pytest.mark.long] if RUNS_DEMO.search(NOT_RUN.sub("", block.code)) else []
    return pytest.param(block, marks=marks, id=f"{block.lang}-block{block.index}")


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_readme_block_runs(block: Block, clone: Path, tmp_path: Path) -> None:
    code = NOT_RUN.sub("", block.code)
    if "kubectl" in code and shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    env = _env(tmp_path)
    if block.lang == "python":
        cmd = [str(VENV / "bin" / "python"), "-c", code]
    else:
        cmd = ["bash", "-e", "-c", code]
    proc = subprocess.Popen(
        cmd,
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"README block {block.index} timed out:\n{code}\n{out}")
    finally:
        _stop_leftovers(clone, proc.pid)
    assert proc.returncode == 0, f"README block {block.index} failed:\n{code}\n--- output\n{out}"
    assert "Traceback" not in out, out
    if block.output is not None:
        printed = {line.rstrip() for line in out.splitlines()}
        for line in block.output.splitlines():
            if "..." in line or not line.strip():
                continue
            assert line.rstrip() in printed, f"README shows {line!r}; the command printed:\n{out}"


def test_the_readme_has_the_blocks_this_test_relies_on() -> None:
    langs = [b.lang for b in BLOCKS]
    assert langs.count("python") >= 2
    assert langs.count("sh") >= 5
    assert any(". .venv/bin/activate" in b.code for b in BLOCKS)
