"""Object UIDs: random version-4 UUIDs, as the apiserver's ``uuid.New()``."""

from __future__ import annotations

import sys
import threading
import uuid

from kubesim.core import names
from kubesim.core.names import new_uid


def test_uids_are_version_4_uuids_in_canonical_text_and_never_repeat() -> None:
    # Several pools' worth, so refills are crossed.
    uids = [new_uid() for _ in range(3 * names._UID_POOL_BYTES // 16 + 7)]
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text  # lower-case hex, 8-4-4-4-12
    # every variant nibble occurs: the two free bits are random, not fixed
    assert {text[19] for text in uids} == set("89ab")


def test_threads_never_take_the_same_bytes() -> None:
    found: list[list[str]] = [[] for _ in range(4)]

    def take(out: list[str]) -> None:
        out.extend(new_uid() for _ in range(2000))

    threads = [threading.Thread(target=take, args=(out,)) for out in found]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    every = [u for out in found for u in out]
    assert len(set(every)) == len(every) == 8000
