"""gwkit.kernel: the IOPub thread of ipykernel runs what was queued for it when it stopped.

The race it mends, made certain here: the thread stops with a flush still queued (ipykernel's
Control thread waits for that flush when the kernel shuts down). A real IOPubThread, no kernel."""

from __future__ import annotations

import threading

import pytest
import zmq
from ipykernel.iostream import IOPubThread

from gwkit.kernel import run_what_is_queued_when_iopub_stops, settle


@pytest.fixture
def iopub_thread():
    context = zmq.Context()
    thread = IOPubThread(context.socket(zmq.PUB))
    thread.start()
    yield thread
    thread.stop()
    thread.close()
    context.destroy(linger=0)


def stop_with_queued(thread: IOPubThread, *events) -> None:
    """What the race leaves: the thread stopped by ipykernel's own `stop`, with `events` still in
    its queue (a flush queued as the loop stopped, its wake-up never read). Stopping the loop from
    inside instead would race the thread's start: a loop stopped before it runs starts again."""
    IOPubThread.stop(thread)
    thread._events.extend(events)


def test_a_flush_queued_when_the_iopub_thread_stops_still_runs(iopub_thread):
    run_what_is_queued_when_iopub_stops(iopub_thread)
    flushed = threading.Event()
    stop_with_queued(iopub_thread, flushed.set)
    assert not flushed.is_set()  # what ipykernel alone leaves: the waiting Control thread hangs
    iopub_thread.stop()
    assert flushed.is_set()


def test_a_queued_event_that_fails_does_not_keep_the_others_from_running(iopub_thread):
    run_what_is_queued_when_iopub_stops(iopub_thread)
    flushed = threading.Event()

    def send_on_a_closed_socket():
        raise zmq.ZMQError(zmq.ENOTSOCK)

    stop_with_queued(iopub_thread, send_on_a_closed_socket, flushed.set)
    iopub_thread.stop()
    assert flushed.is_set()


def test_without_ipykernels_queue_the_thread_is_left_alone():
    class OtherThread:
        def stop(self):
            pass

    other = OtherThread()
    stop = other.stop
    run_what_is_queued_when_iopub_stops(other)
    run_what_is_queued_when_iopub_stops(None)
    assert other.stop == stop


def test_outside_a_kernel_settle_does_nothing():
    import gc

    before = gc.get_freeze_count()
    settle()
    assert gc.get_freeze_count() == before
