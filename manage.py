#!/usr/bin/env python
import os
import sys


def main() -> None:
    if sys.version_info < (3, 12):  # noqa: UP036 - a clear message beats Django's import error
        sys.exit(
            "TraceTrack needs Python 3.12+ (Django 6). Use .venv/bin/python or run `make install`."
        )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tracetrack.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
