"""`python -m compiler ...` runs the `poolc` command line."""

from compiler.cli import main

if __name__ == "__main__":
    main()
