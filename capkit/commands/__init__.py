"""One module per `capkit` subcommand; each has ``register(subparsers)`` and a ``run(args)``.

Subcommands parse arguments and call library functions; no metric logic lives here. ``COMMANDS``
maps each command to its module and one-line help, so ``capkit --help`` and the parser of the one
command being run are built without importing the other commands' modules; ``args`` holds the
argument types they share.
"""
COMMANDS = {
    "score": ("score", "score a candidates file against a references file"),
    "metrics": ("metrics", "list every registered metric and what it needs"),
    "systems": ("systems", "corpus scores of every system of a dataset"),
    "bench": ("bench", "correlation of metrics with human judgments, with CIs"),
    "bench-speed": ("bench_speed", "time capkit against pycocoevalcap 1.2"),
    "diversity": ("diversity", "diversity (Self-CIDEr, LSA, mBLEU) of caption sets"),
    "robustness": ("robustness", "robustness of metrics to pathological captions (AUC of the "
                   "normalised score over the transformation strength)"),
    "train": ("train", "train a learned metric's model and write its checkpoint"),
    "student": ("student", "write the notebooks' student versions and their answer key"),
    "data": ("data", "fetch the datasets (verified, atomic) and list them"),
}
