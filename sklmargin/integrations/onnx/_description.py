"""The plain-array description of a model's logits (moved to the core).

The learned metric reads it during a NumPy fit, which must load no
integration: it lives in :mod:`sklmargin.objective._description`, and this
module keeps the names the exporter and older imports use.
"""

from ...objective._description import (  # noqa: F401
    _PROBE_NORMS,
    _FourierDescription,
    _logit_description,
    _LogitDescription,
    _logits_description,
    _logits_from_description,
    _map_description,
    _NystroemDescription,
    _scale_factors,
)
