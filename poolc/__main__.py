"""`python -m poolc ...` runs the `poolc` command line."""

from poolc.cli import run

if __name__ == "__main__":
    run()
