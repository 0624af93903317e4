"""Order of the gallery: from the geometry of one margin to the whole workflow.

Referenced by name in ``conf.py`` (``within_subsection_order``), so that the
configuration stays picklable. Scripts not listed come last, by file name.
"""

from pathlib import Path

ORDER = (
    "plot_decision_regions.py",
    "plot_target_logits.py",
    "plot_angle_compactness.py",
    "plot_grid_search_m_s.py",
    "plot_cv_calibration.py",
    "plot_linear_probe.py",
    "plot_sv_softmax.py",
    "plot_linear_vs_kernel.py",
    "plot_learned_metric.py",
    "plot_pipeline_dataframe.py",
    "plot_open_set.py",
)


class GalleryOrder:
    """Sort key of sphinx-gallery: position in :data:`ORDER`, then file name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        position = ORDER.index(name) if name in ORDER else len(ORDER)
        return (position, name)

    def __repr__(self):
        return f"<{type(self).__name__}: {', '.join(ORDER)}>"
