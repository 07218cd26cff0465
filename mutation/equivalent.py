"""Equivalent mutants, reviewed: mutants that survive because they cannot change any result.

Each key names a mutant by what it changes, not by mutmut's number (which moves when a function
gains a line): ``(module, function, the line as written, the line as mutated)``, each line stripped
of its indentation, as ``./dev mutate`` prints them. The value says why no input can tell the two
apart. A mutant listed here is not counted as a survivor; one listed but no longer arising is noted.
"""

from __future__ import annotations

EQUIVALENT: dict[tuple[str, str, str, str], str] = {}
