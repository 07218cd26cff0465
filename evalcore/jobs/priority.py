"""Jobs yield the CPU to people: a job's thread runs at a lower priority (a higher nice value) than the pages.

An import or a scoring run keeps a core busy for minutes; on the machine that also serves the labelling pages,
the annotators' requests then wait their turn for the CPU (measured: ``benchmarks.scale_labelling``). On Linux
the nice value belongs to a thread, so lowering it for the thread that runs a job leaves the web server's
threads (and the job's own heartbeat thread, started before) at their priority; threads the job starts, such
as the background COPY, inherit it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


def thread_niceness() -> int | None:
    """This thread's nice value, or None where the system does not say."""
    if not hasattr(os, "getpriority"):
        return None
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except OSError:
        return None


@contextlib.contextmanager
def lower_priority(niceness: int) -> Iterator[None]:
    """Run the block in this thread at nice value ``niceness`` at least (never raises the priority).

    Afterwards the thread goes back to its nice value when the system allows it: an unprivileged process may
    lower its priority but not raise it again, so there the thread stays lower. That is harmless where jobs
    run: a worker's pool process runs nothing but jobs, the embedded mode's job thread ends with its job and
    the CLI's process with its command.
    """
    before = thread_niceness()
    if niceness <= 0 or before is None or before >= niceness:
        yield
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError:  # not allowed here (a sandbox, say): the job runs as it would have
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, thread, before)
