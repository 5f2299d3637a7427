"""The command line: `python -m labs <command> ...`.

Every command lives in its own module, which provides
`add_arguments(parser)` and `main(args) -> int`. This file only wires them up,
turns every LabError into one line on stderr, and keeps tracebacks away from
the reader.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from labs.errors import LabError, UsageError

# command name -> (module, one-line help). Modules are imported when the parser is built.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("labs.catalog", "list the labs and their recorded runs"),
    "quorum": ("labs.quorum", "quorum sizing: validity, failure tolerance, availability"),
    "run": ("labs.run_command", "run a lab and record the run in data/runs/"),
    "parse": ("labs.parse_command", "parse a tool's output file into JSON"),
    "images": ("labs.images", "build, save or load the labs' container images"),
    "clean": ("labs.clean_command", "tear down what the safety journal lists (after a crash too)"),
    "vm": ("labs.vm.command", "build, boot, use and stop disposable lab VMs"),
    "hosts": ("labs.hosts_command", "list the lab hosts (local, inventory, running VMs)"),
    "check-device": ("labs.guard", "say whether a lab may touch a block device (the guard)"),
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
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
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
        print("python -m labs: interrupted (run `python -m labs clean` if a lab was running)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
