"""Each command's presentation, out of the command line (#43): what a command prints,
in text and JSON, from the value the library returned. ``cli.py`` keeps the options,
the wiring and the exit codes, and writes what a view returns; a view never reads
a file, never exits and never writes to a stream."""
