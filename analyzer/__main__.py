"""``python -m analyzer`` is ``mcore-diagnose``."""

from analyzer.cli import main

if __name__ == "__main__":
    main()
