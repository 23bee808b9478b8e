"""Plot helpers: each takes ax=None, returns the axes, never calls show() or changes global style."""
