"""Every notebook executed headless (nbclient), as a user's Restart & Run All: each one's time and the sum.

Each notebook runs in a fresh kernel in a copy of `notebooks/`, on a fresh machine's defaults (no
gateway configured: the embedded sandbox; databases in a temporary folder). The baseline, measured
in the same run, is an empty notebook in a fresh kernel: what kernel start-up alone costs, so the
ratio says how many kernel starts' worth of time the notebooks take. It is the median of three runs:
a kernel that runs no gwkit can still meet ipykernel's shutdown race (gwkit/kernel.py) and take 3 s
more, which one run would pass on to the ratio.

    python benchmarks/notebooks.py [--only 01_quickstart,04_subscriptions]

Prints `ratio notebooks_vs_empty_kernel <value>`; the goal (issue 16) is a sum <= 30 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
GATEWAY_SETTINGS = (
    "GWKIT_BASE_URL",
    "GWKIT_USERNAME",
    "GWKIT_PASSWORD",
    "GWKIT_SITEREFERENCE",
    "GWKIT_TARGET",
    "GWKIT_CONFIG",
)


def run(notebook: nbformat.NotebookNode, workdir: Path) -> float:
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    started = time.perf_counter()
    client.execute()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated notebook names (default: all)")
    args = parser.parse_args()
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    paths = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if not wanted or p.stem in wanted]
    for name in GATEWAY_SETTINGS:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        os.environ["GWKIT_SANDBOX_DB"] = str(tmp / "sandbox.db")
        os.environ["GWKIT_JOURNAL"] = str(tmp / "journal.db")
        workdir = tmp / "notebooks"
        shutil.copytree(
            ROOT / "notebooks", workdir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".gwkit")
        )
        empty_notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")])
        empty = statistics.median(run(empty_notebook, workdir) for _ in range(3))
        times = {p.stem: run(nbformat.read(workdir / p.name, as_version=4), workdir) for p in paths}
    for name, seconds in times.items():
        print(f"{name:<32} {seconds:6.1f} s")
    total = sum(times.values())
    print(f"{'sum':<32} {total:6.1f} s  (empty notebook in a fresh kernel, median of 3: {empty:.1f} s)")
    print(f"ratio notebooks_vs_empty_kernel {total / empty:.1f}")


if __name__ == "__main__":
    main()
