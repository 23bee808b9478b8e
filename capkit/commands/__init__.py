"""One module per `capkit` subcommand; each has ``register(subparsers)`` and a ``run(args)``.

Subcommands parse arguments and call library functions; no metric logic lives here.
"""
COMMANDS = ("score", "systems", "bench", "bench_speed", "diversity", "robustness", "train")
