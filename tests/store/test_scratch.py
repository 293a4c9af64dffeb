"""The scratch buffer (pricedb.scratch): one answer holds it at a time, its arrays are carved one after
another (aligned, never overlapping, within its size), and a thread finding it held gets None."""

from __future__ import annotations

import threading

import numpy as np

from pricedb.scratch import ALIGN, Scratch


def test_arrays_are_carved_one_after_another_within_the_buffer() -> None:
    scratch = Scratch(1000)
    with scratch.held() as room:
        assert room is not None
        first, second = room.take(10), room.take(300)
        assert first is not None and second is not None and len(first) == 10 and len(second) == 300
        assert second.ctypes.data % ALIGN == 0 and second.ctypes.data >= first.ctypes.data + ALIGN
        first[:] = 1
        second[:] = 2
        assert np.all(first == 1)  # not overwritten by the second
        assert room.take(1000) is None  # over what is left: the caller allocates as before
        assert room.take(100) is not None
    with scratch.held() as room:  # the next answer starts again at the beginning
        assert room is not None and room.take(1000 - ALIGN) is not None


def test_a_thread_finding_it_held_gets_none_and_the_holder_keeps_it() -> None:
    scratch = Scratch(100)
    seen: list[object] = []

    def other() -> None:
        with scratch.held() as room:
            seen.append(room)

    with scratch.held() as room:
        assert room is not None
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [None]
    other()
    assert seen[-1] is not None  # given back when the holder was done
