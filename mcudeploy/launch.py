"""The `mcudeploy` command's first step: take over Ctrl-C and SIGTERM before anything heavy is imported.

Importing the command line (numpy, onnx, jinja2 and the whole house) takes a tenth of a second on an
idle machine and much more on a loaded one; a signal in that window used to end the process the
default way (a KeyboardInterrupt traceback, or killed by SIGTERM) instead of with status 130 and one
line. ``mcudeploy.interrupts`` imports only the standard library.
"""
from __future__ import annotations

import os
import sys

from mcudeploy import interrupts


def entry() -> None:
    interrupts.install()
    try:
        from mcudeploy.cli import entry as run
    except BaseException:  # noqa: BLE001  (a signal during the import, however it surfaced)
        if not interrupts.received():
            raise
        _interrupted()
    try:
        run()
    except KeyboardInterrupt:  # a signal before main() takes it over (building the parser, on a loaded machine)
        if not interrupts.received():
            raise
        _interrupted()


def _interrupted() -> None:
    print("mcudeploy: interrupted", file=sys.stderr)
    sys.stderr.flush()
    os._exit(130)
