"""Export typed frames to CSV (for spreadsheets) and Parquet (types kept, for pandas/Arrow tools)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd


def to_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """CSV with a header, no index, timestamps as `YYYY-MM-DD HH:MM:SS`; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(target, index=False, date_format="%Y-%m-%d %H:%M:%S")
    return target


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Parquet (pyarrow) keeping the dtypes: Int64, datetime64, category, string; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(target, engine="pyarrow", index=False)
    return target


def export(frame: pd.DataFrame, directory: str | os.PathLike[str], name: str) -> dict[str, Path]:
    """Both files, `<directory>/<name>.csv` and `.parquet`; returns {"csv": path, "parquet": path}."""
    folder = Path(directory)
    return {
        "csv": to_csv(frame, folder / f"{name}.csv"),
        "parquet": to_parquet(frame, folder / f"{name}.parquet"),
    }
