"""``python -m data_scripts.fetch``: the same command as ``capkit data fetch``, from a clone.

    python -m data_scripts.fetch [DATASET ...|--all] [--mirror DIR] [--data-dir DIR] [--force]

The fetcher and its manifest live in the package (``capkit/data/fetch.py``,
``capkit/data/manifest.json``), so an installed capkit fetches its datasets too; this entry
keeps the clone's command working.
"""
import sys

from capkit.data.fetch import main

if __name__ == "__main__":
    sys.exit(main())
