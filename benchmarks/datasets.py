"""The project's benchmark sets: where each comes from, and a checksum check.

Seven of the eight ``.npz`` sets are shipped in ``benchmarks/data`` (their
licence allows it; ``benchmarks/data/README.md`` gives licence and citation per
set); usps is not. ``manifest.json`` there records the SHA-256 of every array
of every set as the results files in ``benchmarks/`` were measured on.

Usage::

    python benchmarks/datasets.py list                  # sources and licences
    python benchmarks/datasets.py verify [--data DIR]   # check NAME.npz files

``verify`` checks every project set found in ``DIR`` (default: the shipped
folder) and exits with status 1 if any differs.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from _common import SHIPPED_DATA, differences, how_to_get, manifest


def list_sets():
    for name, entry in manifest().items():
        where = "shipped" if entry["shipped"] else "NOT shipped"
        print(
            f"{name:10s} {where:11s} {entry['n_train']:>6d} / {entry['n_test']:<6d} "
            f"rows, {entry['n_features']:>3d} features, {entry['n_classes']:>2d} "
            f"classes; licence: {entry['licence']}\n{'':11s}{entry['original']}"
        )


def verify(data_dir: Path) -> int:
    failures = 0
    for name, entry in manifest().items():
        path = data_dir / entry["file"]
        if not path.is_file():
            print(f"{name:10s} absent from {data_dir}: {how_to_get(name)}")
            continue
        with np.load(path, allow_pickle=False) as data:
            problems = differences(name, {key: data[key] for key in data.files})
        if problems:
            failures += 1
            print(f"{name:10s} DIFFERS: {'; '.join(problems)}")
        else:
            print(f"{name:10s} ok: the arrays the results were measured on")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="sources and licences of the sets")
    check = commands.add_parser("verify", help="check the arrays' SHA-256")
    check.add_argument("--data", type=Path, default=SHIPPED_DATA, metavar="DIR")
    args = parser.parse_args()
    if args.command == "list":
        list_sets()
        return 0
    return verify(args.data)


if __name__ == "__main__":
    sys.exit(main())
