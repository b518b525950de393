"""intentloop: a local, crash-safe, multi-process-safe memory of what the user of a coding agent wants.

Importing this package is cheap (standard library and msgspec only) so the hook path can use it; trio and mcp are
imported only by the modules that need them.
"""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
SERVER_NAME = "intent-loop"

__all__ = ["SCHEMA_VERSION", "SERVER_NAME", "__version__"]
