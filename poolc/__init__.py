"""poolc: a policy-as-code compiler and validator for shared ML compute pools.

Importing the package changes nothing in the process: the hooks the command line
needs (Ctrl-C while its modules load) are installed by the command's entry point,
``poolc.console``, so a program that imports the library keeps its own.
"""

__version__ = "0.2.0"
API_VERSION = "poolc/v1"
