"""The process supervisor of `gwkit sandbox --workers N`: N worker processes serving one port (on
PostgreSQL), each replaced when a signal kills it, all stopped on SIGINT or SIGTERM. The command
line of a worker is the CLI's (`gwkit/cli.py`); this module only runs and watches them."""

from __future__ import annotations

import logging
import os
import signal
import subprocess

__all__ = ["supervise"]


def supervise(command: list[str], count: int, db: str) -> int:
    """Run `count` workers until SIGINT or SIGTERM; a worker killed by a signal is replaced.

    The database URL goes to the workers in their environment, not their command line (`ps` shows that)."""
    env = {**os.environ, "GWKIT_SANDBOX_DB": db}
    ready_read, ready_write = os.pipe()

    def spawn(ready: bool = False) -> subprocess.Popen:
        if not ready:
            return subprocess.Popen(command, env=env)
        return subprocess.Popen([*command, "--ready-fd", str(ready_write)], pass_fds=(ready_write,), env=env)

    workers = {worker.pid: worker for worker in (spawn(ready=True) for _ in range(count))}
    os.close(ready_write)
    with os.fdopen(ready_read, "rb") as ready:
        serving = len(ready.read(count))  # each worker writes a byte once it serves; EOF if all died first
    print(f"  worker processes: {', '.join(map(str, workers))} ({serving} serving)", flush=True)
    stopping: list[int] = []

    def stop(signum, frame) -> None:
        stopping.append(signum)
        for worker in list(workers.values()):
            worker.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    status = 0 if serving == count else 1
    if status:
        stop(signal.SIGTERM, None)
    try:
        while workers:
            pid, code = os.wait()
            worker = workers.pop(pid, None)
            if worker is None:
                continue
            worker.returncode = os.waitstatus_to_exitcode(code)
            if stopping:
                continue
            if worker.returncode < 0:  # killed (SIGKILL, the OOM killer): what it committed stays
                replacement = spawn()
                workers[replacement.pid] = replacement
                logging.getLogger("gwkit.sandbox").warning(
                    "worker %d was killed by signal %d; worker %d started in its place",
                    pid,
                    -worker.returncode,
                    replacement.pid,
                )
            else:  # it stopped by itself (it could not open the database...): stop them all
                status = worker.returncode or 1
                stop(signal.SIGTERM, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("gwkit sandbox stopped.", flush=True)
    return status
