"""The run's clock: the whole run's ETA, corrected as models finish.

Apart from the estimates (:mod:`.estimate`) and the progress lines
(:mod:`.progress`), which both use it.
"""

from __future__ import annotations

from collections.abc import Sequence


def format_duration(seconds: float) -> str:
    """``"8.2 s"``, ``"42 s"``, ``"14 min"``, ``"2.5 h"``: an ETA, not a timing."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class RunClock:
    """The whole run's ETA from per-model estimates, corrected as models finish.

    Parameters
    ----------
    estimates : sequence of float or None
        Seconds of every (dataset, model) in run order, from
        :func:`probe_estimates` (None where unknown: the average is used).
    """

    def __init__(self, estimates: Sequence[float | None]):
        self.estimates = list(estimates)
        self.actual: list[float] = []

    def finish(self, seconds: float) -> None:
        """Record the measured seconds of the next (dataset, model)."""
        self.actual.append(seconds)

    def total(self) -> float:
        """Return the estimate of the whole run, in seconds."""
        return self.remaining()

    def _scale(self) -> float:
        """Measured seconds per estimated second over the models finished so far."""
        pairs = [
            (actual, estimate)
            for actual, estimate in zip(self.actual, self.estimates, strict=False)
            if estimate
        ]
        estimated = sum(estimate for _, estimate in pairs)
        return sum(actual for actual, _ in pairs) / estimated if estimated > 0 else 1.0

    def remaining(
        self, current_elapsed: float | None = None, current_eta: float | None = None
    ) -> float:
        """Return the seconds left in the run.

        Parameters
        ----------
        current_elapsed : float, default=None
            Seconds spent on the model now running; None between two models.
        current_eta : float, default=None
            That model's own ETA (its grid search's), when known: it replaces
            the estimate of what is left of it.
        """
        scale, units = self._scale(), self._units()
        done = len(self.actual)
        if current_elapsed is None:
            return scale * sum(units[done:])
        left = sum(units[done + 1 :]) * scale
        if done < len(units):
            if current_eta is not None:
                left += current_eta
            else:
                left += max(0.0, scale * units[done] - current_elapsed)
        return left

    def overdue(self, current_elapsed: float) -> bool:
        """Whether the model now running has outlasted its (corrected) estimate."""
        done = len(self.actual)
        units = self._units()
        return done < len(units) and current_elapsed > self._scale() * units[done]

    def _units(self) -> list[float]:
        """Return the estimates, the average in place of a failed probe's None."""
        known = [estimate for estimate in self.estimates if estimate is not None]
        average = sum(known) / len(known) if known else 0.0
        return [
            average if estimate is None else estimate for estimate in self.estimates
        ]
