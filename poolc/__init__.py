"""poolc: a policy-as-code compiler and validator for shared ML compute pools."""

__version__ = "0.1.0"
API_VERSION = "poolc/v1"
