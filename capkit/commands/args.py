"""Argument types shared by several subcommands."""
from __future__ import annotations

import argparse


def metric_list(text: str) -> list[str]:
    """'bleu_4, cider_d,pkg.mod:fn' -> ['bleu_4', 'cider_d', 'pkg.mod:fn']."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one metric name")
    return names
