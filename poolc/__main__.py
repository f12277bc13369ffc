"""`python -m poolc ...` runs the `poolc` command line (with its hooks, poolc.console)."""

from poolc.console import run

if __name__ == "__main__":
    run()
