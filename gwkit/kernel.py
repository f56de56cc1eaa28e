"""Housekeeping for the notebook kernel gwkit runs in: what makes its exit (every Restart, every
notebook run headless) quick and sure. `settle()` is called by the first `gwkit.connect()` in a
kernel; outside one (scripts, pytest) it does nothing, as a library should."""

from __future__ import annotations

import gc
import sys
from typing import Any

_settled = False


def settle() -> None:
    """In a notebook kernel, once: the heap is frozen and the IOPub thread's stop is made sure."""
    global _settled
    kernel = None if _settled else running_kernel()
    if kernel is None:
        return
    _settled = True
    freeze_the_heap()
    run_what_is_queued_when_iopub_stops(getattr(kernel, "iopub_thread", None))


def running_kernel() -> Any:
    ipython = sys.modules.get("IPython")
    return getattr(ipython.get_ipython(), "kernel", None) if ipython is not None else None


def freeze_the_heap() -> None:
    """Take the objects alive now out of the garbage collector's walks (`gc.freeze`, after a
    collection of the young ones).

    They are the imported modules, mostly (pandas, IPython, the sandbox's web stack), and live as
    long as the kernel. Python walks every tracked object on each full collection, and several
    times while it shuts down: there it cost each kernel's exit 0.3 s. Objects made later are
    collected as before, so a file a notebook leaves open in a reference cycle is still flushed
    when the kernel exits."""
    gc.collect(1)  # the young garbage is freed, not kept for good (a full collection costs 70 ms)
    gc.freeze()


def run_what_is_queued_when_iopub_stops(iopub_thread: Any) -> None:
    """Make ipykernel's IOPub thread run, once it has stopped, what was queued for it meanwhile.

    ipykernel (6.29 to 7.4 at least) stops that thread while the Control thread, having answered the
    shutdown request, flushes stdout: it queues the flush and waits for it. When the thread stops
    first, the flush is never run, the Control thread waits out its 10 s, and the kernel's exit hangs
    until the frontend kills it 2.5 s later: one exit in ten, measured headless (JupyterLab's Restart
    shuts a kernel down the same way). Running the queue once the thread has stopped (and it is no
    longer running it) lets the flush finish. Left alone on an ipykernel without that queue."""
    queue = getattr(iopub_thread, "_events", None)
    stop = getattr(iopub_thread, "stop", None)
    if queue is None or stop is None or not hasattr(queue, "popleft"):
        return

    def stop_then_run_the_queue() -> None:
        stop()
        while queue:
            event = queue.popleft()
            try:
                event()
            except Exception:  # a message the closing kernel can no longer send: nobody reads it
                pass

    iopub_thread.stop = stop_then_run_the_queue
