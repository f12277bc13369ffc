"""`python -m compiler ...` runs the `poolc` command line."""

from compiler.cli import run

if __name__ == "__main__":
    run()
