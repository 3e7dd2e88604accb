"""This process's threads for the compiled loops: one per core, kept between calls (a
forked child builds its own: the parent's threads are not in it), and started in the
background when a loop is first loaded."""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def thread_pool() -> ThreadPoolExecutor:
    """This process's threads, one per core."""
    return _threads(cores(), os.getpid())


def start_threads() -> None:
    """Starts this process's threads, once, without waiting on them: a thread's first
    task can cost ~10 ms (its stack and its allocator's arena touched for the first time,
    slow on some virtual machines), which then overlaps the caller's own work rather than
    its first threaded sum."""
    _start(os.getpid())


@functools.cache
def _threads(cores: int, process: int) -> ThreadPoolExecutor:
    # kept between calls: starting threads costs more than a small sum
    return ThreadPoolExecutor(cores, thread_name_prefix=f"attnpool-native-{process}")


@functools.cache
def _start(process: int) -> None:
    used = cores()
    if used > 1:  # each task waits for the others: an idle thread would take them all
        meet = threading.Barrier(used, timeout=1.0)
        try:
            for _ in range(used):
                thread_pool().submit(meet.wait)
        except RuntimeError:  # the interpreter is shutting down: nothing to gain
            meet.abort()
