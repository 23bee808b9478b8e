"""`capkit data`: fetch the datasets (`capkit data fetch`) and list them (`capkit data list`).

    capkit data fetch clipscore_example thumb       # the public ones, from their pinned URLs
    capkit data fetch --all --mirror ../shared/data # every dataset, from a local mirror folder
    capkit data list                                # what there is, and what is fetched here

The work is ``capkit.data.fetch`` (manifest, verification, locks); this module parses the
arguments and prints one line per dataset (with its licence terms and citation once fetched).
"""
from __future__ import annotations

import argparse
import sys
import textwrap


def register(sub) -> None:
    from capkit.data.paths import DATASETS, data_dir
    p = sub.add_parser("data", help="fetch the datasets (verified, atomic) and list them")
    actions = p.add_subparsers(dest="action", required=True)
    f = actions.add_parser(
        "fetch", help="fetch datasets into the data folder, checked against their sha256",
        description="Fetch datasets into the data folder: from their pinned public URLs, or "
        "from a local mirror folder (--mirror DIR, laid out as DIR/<dataset>/<path>). Every "
        "file is checked against the manifest's size and sha256; a dataset already complete "
        "is skipped, a damaged file fetched again.")
    f.add_argument("datasets", nargs="*", metavar="DATASET",
                   help=f"one or more of: {', '.join(DATASETS)}")
    f.add_argument("--all", action="store_true", help="fetch every dataset")
    f.add_argument("--mirror", metavar="DIR", help="copy from DIR/<dataset>/<path> instead of "
                   "downloading (e.g. ../shared/data); some datasets exist only there")
    f.add_argument("--data-dir", metavar="DIR", help="target folder (default: $CAPKIT_DATA_DIR "
                   f"if set, else {data_dir()})")
    f.add_argument("--force", action="store_true", help="fetch again even if present")
    f.set_defaults(func=run_fetch, parser=f)
    q = actions.add_parser("list", help="every dataset: files, size, where it comes from, "
                           "whether it is fetched")
    q.add_argument("--data-dir", metavar="DIR", help="the folder to look in (default: "
                   f"$CAPKIT_DATA_DIR if set, else {data_dir()})")
    q.set_defaults(func=run_list)


def run_fetch(args: argparse.Namespace) -> int:
    from capkit.data.fetch import fetch, load_manifest
    if bool(args.datasets) == args.all:
        args.parser.error("name one or more datasets, or use --all (not both)")
    results = fetch(None if args.all else args.datasets, mirror=args.mirror,
                    data_dir=args.data_dir, force=args.force)
    manifest = load_manifest()
    for r in results:
        print(_report(r, manifest[r.dataset]), file=sys.stdout if r.ok else sys.stderr, flush=True)
    return 0 if all(r.ok for r in results) else 1


def _report(result, entry: dict) -> str:
    status = "FAILED: " if result.status == "failed" else ""
    lines = [f"{result.dataset}: {status}{result.detail}"]
    if result.status == "fetched":
        for label in ("terms", "citation"):
            lines += textwrap.wrap(f"{label}: {entry[label]}", width=100, initial_indent="    ",
                                   subsequent_indent="      ")
    return "\n".join(lines)


def run_list(args: argparse.Namespace) -> int:
    from capkit.data.fetch import load_manifest
    from capkit.data.paths import data_dir, marker_path
    from capkit.report import format_table
    root, rows = data_dir(args.data_dir), []
    for name, entry in load_manifest().items():
        public = all(f["url"] for f in entry["files"])
        size = sum(f["size"] for f in entry["files"]) / 1e6
        rows.append([name, str(len(entry["files"])), f"{size:.1f}",
                     "public URLs" if public else "mirror only",
                     "yes" if marker_path(name, root).is_file() else "no"])
    print(format_table(["dataset", "files", "MB", "source", "fetched"], rows, "table", left=1))
    print(f"\ndata folder: {root}\nfetch with: capkit data fetch DATASET ... (add --mirror DIR "
          "for the mirror-only ones)")
    return 0
