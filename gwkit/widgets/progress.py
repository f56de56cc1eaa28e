"""A progress bar to hand to long operations: `gw.query_all(..., progress=ProgressBar("Days queried"))`."""

from __future__ import annotations

import ipywidgets as widgets


class ProgressBar(widgets.HBox):
    """A bar and a count that follow `bar(done, total)` calls (any unit: days, payments, windows)."""

    def __init__(self, description: str = "Progress"):
        self.bar = widgets.IntProgress(
            value=0,
            min=0,
            max=1,
            description=description,
            bar_style="info",
            style={"description_width": "initial"},
        )
        self.text = widgets.HTML()
        super().__init__([self.bar, self.text])
        self.add_class("gwkit-progress")

    def __call__(self, done: int, total: int) -> None:
        self.bar.max = max(total, 1)
        self.bar.value = min(done, self.bar.max)
        self.text.value = f"{done:,} of {total:,}"
        if done >= total:
            self.bar.bar_style = "success"
