"""The package's version, alone in its module so that any layer can print it."""

__version__ = "0.1.0"
