#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

An outage (the database or the broker away) or a missing file ends a command with one line on
standard error and exit status 1, not a traceback; ``--traceback`` shows it anyway.
"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except (Exception, KeyboardInterrupt) as error:
        message = _operational(error)
        if message is None or "--traceback" in sys.argv:
            raise
        sys.stderr.write(f"error: {message}\n")
        sys.exit(1)


def _operational(error: BaseException) -> str | None:
    """One line for an operational failure (database, broker, storage away; a file missing); None for a bug."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"{error.strerror}: {error.filename}" if error.filename else str(error)
    from labelstudio_lite.outage import outage_message

    return outage_message(error)


if __name__ == "__main__":
    main()
