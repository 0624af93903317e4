r"""Progress of a ``compare`` run on stderr: one line per fit, live while tuning.

On a terminal the current line is rewritten in place (``\r``); into a file or a
pipe, tuning progress is one line every :attr:`Progress.interval` seconds, so a
log shows signs of life without flooding. A fit that reports nothing for
:data:`HEARTBEAT` seconds (one slow fit of a grid search, or the final fit)
gets a heartbeat line from a background thread, and every line carries the
whole run's ETA when a :class:`~sklmargin.compare.clock.RunClock` is given.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from .clock import RunClock, format_duration
from .settings import format_number

#: Seconds between two tuning updates when the stream is not a terminal.
LOG_INTERVAL = 10.0

#: Seconds between two tuning updates on a terminal.
TTY_INTERVAL = 0.2

#: Seconds without news before a heartbeat says that a fit is still running.
HEARTBEAT = 10.0


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
    heartbeat : float, default=HEARTBEAT
        Seconds without an update after which a background thread reports
        that the current fit is still running (and again every ``heartbeat``
        seconds).
    clock : RunClock, default=None
        Estimates of every (dataset, model), for the whole run's ETA.
    """

    def __init__(
        self,
        total: int,
        stream: TextIO | None,
        interval: float | None = None,
        heartbeat: float = HEARTBEAT,
        clock: RunClock | None = None,
    ):
        self.total = total
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(isatty()) if callable(isatty) else False
        if interval is None:
            interval = TTY_INTERVAL if self.tty else LOG_INTERVAL
        self.interval = interval
        self.heartbeat = heartbeat
        self.clock = clock
        self.count = 0
        self.start_time = 0.0
        self._prefix = ""
        self._status = ""
        self._stage = "fit"
        self._last_update = 0.0
        self._last_news = 0.0
        self._last_beat = 0.0
        self._tuning_eta: float | None = None
        self._updated = False
        # The heartbeat thread and the main thread write to the same stream.
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, dataset: str, model: str) -> None:
        """Announce the next fit before it starts (long fits show what runs)."""
        self._stop_heartbeat()
        self.count += 1
        now = time.perf_counter()
        self.start_time = self._last_update = self._last_news = self._last_beat = now
        self._updated = False
        self._status = ""
        self._stage = "fit"
        self._tuning_eta = None
        self._prefix = f"[{self.count}/{self.total}] {dataset} / {model} ..."
        self._write(self._prefix)
        if self.stream is not None and self.heartbeat > 0:
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._beat, name="compare-heartbeat", daemon=True
            )
            self._thread.start()

    def stage(self, name: str) -> None:
        """Name what runs now ("CV fit", "final fit"), for the heartbeat."""
        self._stage = name
        self._last_news = time.perf_counter()

    def tuning(self, done: int, total: int, detail: str = "") -> None:
        """Report ``done`` of ``total`` CV fits of the grid search, with an ETA.

        Throttled to one update per :attr:`interval` seconds (the last fit is
        always shown on a terminal).
        """
        now = time.perf_counter()
        self._last_news = now
        elapsed = now - self.start_time
        self._tuning_eta = elapsed / done * (total - done) if done else None
        if now - self._last_update < self.interval and not (self.tty and done == total):
            return
        self._last_update = now
        self._status = (
            f"tuning: {done}/{total} CV fits{detail}, {format_number(elapsed)} s "
            f"elapsed, ETA {format_number(self._tuning_eta)} s"
        )
        self._show(self._status + self._run_eta(elapsed))

    def done(self, row: Mapping[str, Any]) -> None:
        """Finish the line with the outcome and the elapsed time."""
        self._stop_heartbeat()
        seconds = time.perf_counter() - self.start_time
        if self.clock is not None:
            self.clock.finish(seconds)
        elapsed = format_number(seconds)
        if row["status"] == "ok":
            outcome = f"acc {100 * row['accuracy']:.2f}%"
        else:  # skipped or error: say why right away, not only in the table
            outcome = row["notes"][0] if row["notes"] else row["status"]
        outcome += self._run_eta()
        with self._lock:
            if self.tty and self._updated:
                self._raw(f"\r{self._fit(f'{self._prefix} {elapsed} s ({outcome})')}")
                self._raw("\x1b[K\n")
            elif self._updated:
                self._raw(f"\n    done: {elapsed} s ({outcome})\n")
            else:
                self._raw(f" {elapsed} s ({outcome})\n")

    def close(self) -> None:
        """Stop the heartbeat (the run ended, or was interrupted)."""
        self._stop_heartbeat()

    # -- internals -----------------------------------------------------------
    def _run_eta(self, current: float | None = None) -> str:
        """``"; run ETA 12 min"``, or "" without estimates."""
        if self.clock is None:
            return ""
        if current is None:  # between two models
            return f"; run ETA {format_duration(self.clock.remaining())}"
        eta = self.clock.remaining(current, self._tuning_eta)
        if self._tuning_eta is None and self.clock.overdue(current):
            # Past its estimate: how much longer this fit takes is unknown.
            return f"; run ETA this fit (over its estimate) + {format_duration(eta)}"
        return f"; run ETA {format_duration(eta)}"

    def _beat(self) -> None:
        stop = self._stop
        while not stop.wait(min(1.0, self.heartbeat / 4)):
            now = time.perf_counter()
            if now - max(self._last_news, self._last_beat) < self.heartbeat:
                continue
            self._last_beat = now
            # Time since the last news: the running time of the current fit.
            text = (
                f"{self._stage} running for {format_number(now - self._last_news)} "
                f"s ({format_number(now - self.start_time)} s on this model)"
            )
            if self._status and self.tty:
                text = f"{self._status}; {text}"
            self._show(text + self._run_eta(now - self.start_time), stop)

    def _stop_heartbeat(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def _show(self, text: str, stop: threading.Event | None = None) -> None:
        """Show a status: the rewritten line on a terminal, a new line in a log."""
        with self._lock:
            if stop is not None and stop.is_set():
                return  # the model finished while this beat was being written
            if self.tty:
                self._raw(f"\r{self._fit(f'{self._prefix} {text}')}\x1b[K")
            else:
                self._raw(f"\n    {text}")
            self._updated = True

    def _fit(self, line: str) -> str:
        """Cut a rewritten line to the terminal: a wrapped one cannot be redrawn."""
        width = shutil.get_terminal_size((100, 24)).columns - 1
        return line if len(line) <= width else line[: width - 3] + "..."

    def _write(self, text: str) -> None:
        with self._lock:
            self._raw(text)

    def _raw(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()
