"""``python -m analyzer`` is ``mcore-diagnose``."""

from analyzer.cli import main

main()
