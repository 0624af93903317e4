"""The shipped benchmark sets are the arrays the results were measured on."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
MANIFEST = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))["datasets"]
SHIPPED = sorted(name for name, entry in MANIFEST.items() if entry["shipped"])


def test_manifest_lists_the_eight_sets_and_ships_seven():
    assert len(MANIFEST) == 8 and len(SHIPPED) == 7
    assert not MANIFEST["usps"]["shipped"]
    assert not (DATA / "usps.npz").exists()
    for name in SHIPPED:
        assert MANIFEST[name]["licence"].startswith("CC BY 4.0"), name


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_arrays_match_their_checksums(name):
    entry = MANIFEST[name]
    with np.load(DATA / entry["file"], allow_pickle=False) as data:
        assert sorted(data.files) == sorted(entry["arrays"])
        for key, expected in entry["arrays"].items():
            array = data[key]
            assert array.dtype.str == expected["dtype"]
            assert list(array.shape) == expected["shape"]
            digest = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
            assert digest == expected["sha256"], (name, key)
    assert entry["arrays"]["X_train"]["shape"] == [
        entry["n_train"],
        entry["n_features"],
    ]
    assert entry["arrays"]["y_test"]["shape"] == [entry["n_test"]]
