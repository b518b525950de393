"""Helpers shared by the test packages, in one place (none of them is defined in a test module or twice).

Importable as ``_support`` because pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in ``pyproject.toml``);
with ``--import-mode=importlib`` no test directory is on it otherwise. Not collected: no module here is named
``test_*``.

- :mod:`_support.mcp_client`: the official MCP client against real ``intentloop serve`` subprocesses.
- :mod:`_support.mcp_wire`: raw JSON-RPC lines to a real server, and the recorded SDK-era answers.
- :mod:`_support.mcp_memory`: in-memory connections to an in-process ``McpServer`` (unit tests).
- :mod:`_support.tool_args`: arguments of the claim-adding tools.
"""
