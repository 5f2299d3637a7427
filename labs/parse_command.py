"""`python -m labs parse <tool> FILE ...`: turn a tool's saved output into JSON.

Each tool module provides `add_parse_arguments(parser)` and `parse_from_args(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib

# tool name -> module in labs/tools/
PARSEABLE_TOOLS: dict[str, str] = {
    "pgbench": "labs.tools.pgbench",
    "fio": "labs.tools.fio",
    "mdstat": "labs.tools.mdadm",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    tool_parsers = parser.add_subparsers(dest="tool", metavar="TOOL", parser_class=type(parser))
    tool_parsers.required = True
    for tool_name, module_name in PARSEABLE_TOOLS.items():
        module = importlib.import_module(module_name)
        tool_parser = tool_parsers.add_parser(
            tool_name, help=module.PARSE_HELP, description=module.PARSE_HELP)
        module.add_parse_arguments(tool_parser)
        tool_parser.set_defaults(parse_tool=module.parse_from_args)


def main(args: argparse.Namespace) -> int:
    return args.parse_tool(args)
