r"""Progress of a ``compare`` run on stderr: one line per fit, live while tuning.

On a terminal the current line is rewritten in place (``\r``); into a file or a
pipe, tuning progress is one line every :attr:`Progress.interval` seconds, so a
log shows signs of life without flooding.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

from .settings import format_number

#: Seconds between two tuning updates when the stream is not a terminal.
LOG_INTERVAL = 10.0

#: Seconds between two tuning updates on a terminal.
TTY_INTERVAL = 0.2


class Progress:
    """One progress line per (dataset, model), or nothing when quiet.

    Parameters
    ----------
    total : int
        Number of (dataset, model) pairs.
    stream : file-like or None
        Where to write (stderr); ``None`` silences the progress.
    interval : float, default=None
        Seconds between two tuning updates; ``None`` picks
        :data:`TTY_INTERVAL` on a terminal and :data:`LOG_INTERVAL` otherwise.
    """

    def __init__(
        self, total: int, stream: TextIO | None, interval: float | None = None
    ):
        self.total = total
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(isatty()) if callable(isatty) else False
        if interval is None:
            interval = TTY_INTERVAL if self.tty else LOG_INTERVAL
        self.interval = interval
        self.count = 0
        self.start_time = 0.0
        self._prefix = ""
        self._last_update = 0.0
        self._updated = False

    def start(self, dataset: str, model: str) -> None:
        """Announce the next fit before it starts (long fits show what runs)."""
        self.count += 1
        self.start_time = self._last_update = time.perf_counter()
        self._updated = False
        self._prefix = f"[{self.count}/{self.total}] {dataset} / {model} ..."
        self._write(self._prefix)

    def tuning(self, done: int, total: int, detail: str = "") -> None:
        """Report ``done`` of ``total`` CV fits of the grid search, with an ETA.

        Throttled to one update per :attr:`interval` seconds (the last fit is
        always shown on a terminal).
        """
        now = time.perf_counter()
        if now - self._last_update < self.interval and not (self.tty and done == total):
            return
        self._last_update = now
        elapsed = now - self.start_time
        eta = elapsed / done * (total - done) if done else None
        text = (
            f"tuning: {done}/{total} CV fits{detail}, {format_number(elapsed)} s "
            f"elapsed, ETA {format_number(eta)} s"
        )
        if self.tty:
            self._write(f"\r{self._prefix} {text}\x1b[K")
        else:
            self._write(f"\n    {text}")
        self._updated = True

    def done(self, row: Mapping[str, Any]) -> None:
        """Finish the line with the outcome and the elapsed time."""
        elapsed = format_number(time.perf_counter() - self.start_time)
        if row["status"] == "ok":
            outcome = f"acc {100 * row['accuracy']:.2f}%"
        else:  # skipped or error: say why right away, not only in the table
            outcome = row["notes"][0] if row["notes"] else row["status"]
        if self.tty and self._updated:
            self._write(f"\r{self._prefix} {elapsed} s ({outcome})\x1b[K\n")
        elif self._updated:
            self._write(f"\n    done: {elapsed} s ({outcome})\n")
        else:
            self._write(f" {elapsed} s ({outcome})\n")

    def _write(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()
