"""Adapters for the evaluation tools' exports, one module by tool family.

Each turns the tool's records into the records of our plain formats (see docs/formats.md), so
every rule of those (limits, NaN, lists, errors with line and field) applies unchanged;
:mod:`evalcore.services.tool_formats` tells the tools apart and dispatches to these.
"""
