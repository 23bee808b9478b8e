from capkit.cli import entry

entry()
