"""``python -m data_scripts.fetch ARGS`` is ``capkit data fetch ARGS``, kept for clones.

    python -m data_scripts.fetch [DATASET ...|--all] [--mirror DIR] [--data-dir DIR] [--force]

The fetcher and its manifest live in the package (``capkit/data/fetch.py``,
``capkit/data/manifest.json``), so an installed capkit fetches its datasets with
``capkit data fetch``; this entry runs that command.
"""
import sys

from capkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["data", "fetch", *sys.argv[1:]]))
