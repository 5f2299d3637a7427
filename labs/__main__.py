"""The command line: `python -m labs <command> ...`.

Every command lives in its own module, which provides
`add_arguments(parser)` and `main(args) -> int`. This file only wires them up,
turns every LabError into one line on stderr, and keeps tracebacks away from
the reader.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from labs.errors import LabError, UsageError
from labs.progress import keep_swallowed_interrupts, note_interrupt

# command name -> module in labs/commands/ (each has HELP, add_arguments(parser), main(args)).
COMMANDS: dict[str, str] = {
    "list": "labs.commands.list",
    "run": "labs.commands.run",
    "quorum": "labs.commands.quorum",
    "disk": "labs.commands.disk",
    "parse": "labs.commands.parse",
    "images": "labs.commands.images",
    "vm": "labs.commands.vm",
    "hosts": "labs.commands.hosts",
    "clean": "labs.commands.clean",
    "leftovers": "labs.commands.leftovers",
    "check-device": "labs.commands.check_device",
    "export": "labs.commands.export",
    "import": "labs.commands.import_runs",
}


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr and exit code 2."""

    def error(self, message: str):  # noqa: D102 - argparse's own hook
        raise UsageError(f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="python -m labs",
        description="Labs and models for the book 'How storage stays durable and fast'.",
    )
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=OneLineErrorParser
    )
    subparsers.required = True
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.main)
    return parser


def _interrupted(signum: int, frame: object) -> None:
    # Ctrl-C (SIGINT), and SIGTERM (a `kill`, a closing terminal) too, unwind the lab so that
    # its own cleanup runs. Noted first: if something swallows this KeyboardInterrupt, the
    # lab's next progress step raises it again.
    interrupt = KeyboardInterrupt()
    note_interrupt(interrupt)
    raise interrupt


def main(argv: list[str] | None = None) -> int:
    # Installed even when the lab was started from a shell that ignores SIGINT for its
    # background jobs (Python then leaves it ignored).
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, _interrupted)
    # A Ctrl-C that lands in a finalizer is not printed as "Exception ignored" either.
    sys.unraisablehook = keep_swallowed_interrupts
    note_interrupt(None)  # none from an earlier call in this process
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.handler(args) or 0)
    except LabError as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        if not message.startswith("python -m labs"):
            message = f"python -m labs: error: {message}"
        print(message, file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        note_interrupt(None)
        print("python -m labs: interrupted (run `python -m labs clean` if a lab was running)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`python -m labs list | head -1`): stop quietly, as other
        # Unix tools do. Python flushes stdout once more at exit; that goes nowhere now.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a command stopped by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
