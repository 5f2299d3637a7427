"""The lab contract: the parameters every lab shares, and how they become a command line.

Every lab is a package `labs/<lab>/` (see the README's "Lab contract") whose `__init__.py`
names NAME, DESCRIPTION, BOOK_PAGE, NEEDS and `Parameters`, a dataclass derived from
`LabParameters` below. From that one dataclass come, with nothing written twice:

- the options of `python -m labs run <lab>` (one per field: `--field-name`, typed from the
  annotation, the help text from `option(...)`);
- the named profiles (`--profile quick|full`, plus `--quick` as a shorthand);
- validation with one-line errors (ranges declared in `option(...)`, cross-field rules in
  the lab's own `check()`);
- the exact command line that reproduces a run (`params.command_line()`), which every run
  prints first and records in run.json; it parses back into the same parameters (tested).

Supported field types: int, float, str, bool, `X | None` of those, tuple[int, ...] and
tuple[str, ...] (comma-separated on the command line), list[str] (a repeatable option).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import shlex
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from labs.errors import UsageError

HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def option(default: Any, help: str, *, minimum: float | None = None,
           maximum: float | None = None, choices: tuple[Any, ...] | None = None,
           cli: bool = True, metavar: str | None = None) -> Any:
    """A lab parameter: its default, its help text and its valid range.

    `cli=False`: not a command-line option (set by profiles only).
    """
    metadata = {"help": help, "minimum": minimum, "maximum": maximum, "choices": choices,
                "cli": cli, "metavar": metavar}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class LabParameters:
    """What every lab takes. A lab subclasses it, adds its own fields and its PROFILES."""

    LAB: ClassVar[str] = ""
    # profile name -> field values that differ from the dataclass defaults
    PROFILES: ClassVar[dict[str, dict[str, Any]]] = {"full": {}}

    host: str = option("local", "lab host: local, an inventory host, or a running lab VM "
                                "(vm1, vm2); `python -m labs hosts` lists them")
    profile: str = option("full", "named set of defaults: quick (minutes, for a first try and "
                                  "the tests) or full (what the book shows)")
    seed: int = option(1, "seed of every random choice the lab makes", minimum=0,
                       maximum=2**31 - 1)

    # --- construction -------------------------------------------------------------------

    @classmethod
    def for_profile(cls, profile: str | None = None, **overrides: Any) -> Self:
        """Parameters of a named profile with some fields overridden, validated."""
        profile = profile or cls.default_profile()
        if profile not in cls.PROFILES:
            raise UsageError(f"{cls.LAB}: unknown profile {profile!r}; "
                             f"use {' or '.join(cls.PROFILES)}")
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise UsageError(f"{cls.LAB}: unknown parameter {sorted(unknown)[0]!r}")
        values = {**cls.PROFILES[profile], **overrides, "profile": profile}
        params = cls(**values)
        params.validate()
        return params

    @classmethod
    def from_record(cls, recorded: dict[str, Any]) -> Self:
        """The parameters a recorded run was made with (its run.json "parameters"), typed
        and validated. A run made before a field existed takes that field from its profile;
        what the record keeps beside the fields (its command line) is left out."""
        hints = typing.get_type_hints(cls)
        known = {item.name for item in fields(cls)} - {"profile"}
        values = {}
        for name, value in recorded.items():
            if name in known:
                kind, _element = _kind(hints[name])
                values[name] = tuple(value) if kind is tuple and isinstance(value, list) \
                    else value
        profile = recorded.get("profile") or cls.default_profile()
        if profile not in cls.PROFILES:
            raise UsageError(f"{cls.LAB}: a run of unknown profile {profile!r}")
        params = cls(**{**cls.PROFILES[profile], **values, "profile": profile})
        # Types and ranges only: the cross-field rules (check) judge what a user asks for,
        # and a record holds what the lab resolved (a loop run's own devices, say).
        params.validate_fields()
        return params

    @classmethod
    def of(cls, run: Any) -> Self:
        """The parameters a recorded run (labs.records.RecordedRun) was made with, typed: the
        page side reads these, never run.meta["parameters"] by name."""
        return cls.from_record(run.meta["parameters"])

    @classmethod
    def default_profile(cls) -> str:
        return "full" if "full" in cls.PROFILES else next(iter(cls.PROFILES))

    def validate(self) -> None:
        """Types, declared ranges and choices, then the lab's own cross-field rules."""
        self.validate_fields()
        self.check()

    def validate_fields(self) -> None:
        """Each field's type, declared range and choices, the host name and the profile."""
        hints = typing.get_type_hints(type(self))
        for item in fields(self):
            value = getattr(self, item.name)
            flag = _flag(item.name)
            _check_type(flag, value, hints[item.name])
            meta = item.metadata
            values = value if isinstance(value, tuple | list) else [value]
            for one in values:
                if one is None or isinstance(one, bool):
                    continue
                if isinstance(one, float) and not math.isfinite(one):
                    # NaN would pass every range check below: it compares false.
                    raise UsageError(f"{flag} must be a finite number, got {one}")
                if meta.get("minimum") is not None and one < meta["minimum"]:
                    raise UsageError(f"{flag} must be at least {meta['minimum']:g}, got {one}")
                if meta.get("maximum") is not None and one > meta["maximum"]:
                    raise UsageError(f"{flag} must be at most {meta['maximum']:g}, got {one}")
                if meta.get("choices") and one not in meta["choices"]:
                    raise UsageError(f"{flag} {one}: use one of "
                                     f"{', '.join(map(str, meta['choices']))}")
        if not HOST_NAME.match(self.host):
            raise UsageError(f"--host {self.host!r}: not a host name")
        if self.profile not in self.PROFILES:
            raise UsageError(f"--profile {self.profile}: use {' or '.join(self.PROFILES)}")

    def check(self) -> None:
        """The lab's own rules between fields (raise UsageError with one line)."""

    # --- the command line ---------------------------------------------------------------

    def command_line(self) -> str:
        """The exact `python -m labs run ...` that makes a run with these parameters.

        Every parameter is spelled out, not only those that differ from the profile: the
        line reproduces the run even if a later version changes a default.
        """
        argv = ["python", "-m", "labs", "run", self.LAB, "--host", self.host,
                "--profile", self.profile]
        for item in fields(self):
            if item.name in ("host", "profile") or not item.metadata.get("cli", True):
                continue
            argv += _format_option(item.name, getattr(self, item.name))
        return shlex.join(argv)

    def changed_from_profile(self, ignore: tuple[str, ...] = ("host", "peer", "seed")) -> list[str]:
        """The fields set apart from their profile's values (other than where the lab runs
        and its seed): a quick run's measured time holds only for the quick profile as it is."""
        base = type(self)(**{**self.PROFILES[self.profile], "profile": self.profile})
        return [item.name for item in fields(self) if item.name not in ignore
                and getattr(self, item.name) != getattr(base, item.name)]

    def as_record(self) -> dict[str, Any]:
        """What run.json keeps: every field, plus the command line that reproduces it."""
        record = {}
        for item in fields(self):
            value = getattr(self, item.name)
            record[item.name] = list(value) if isinstance(value, tuple) else value
        record["command_line"] = self.command_line()
        return record

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """One option per field; nothing defaults here, so profiles can fill what is unset."""
        hints = typing.get_type_hints(cls)
        parser.add_argument("--quick", action="store_true",
                            help="shorthand for --profile quick" if "quick" in cls.PROFILES
                            else argparse.SUPPRESS)
        for item in fields(cls):
            if not item.metadata.get("cli", True):
                continue
            flag = _flag(item.name)
            kind, element = _kind(hints[item.name])
            default = cls.PROFILES.get(cls.default_profile(), {}).get(
                item.name, item.default if item.default is not dataclasses.MISSING
                else item.default_factory())
            shown = ",".join(map(str, default)) if isinstance(default, tuple | list) \
                else default
            help_text = item.metadata.get("help", "")
            if shown is not None:
                help_text += f" (default: {shown})"
            if item.name == "profile":
                help_text = f"{item.metadata['help']} (one of {', '.join(cls.PROFILES)}; " \
                            f"default: {cls.default_profile()})"
            common = {"dest": item.name, "default": None, "help": help_text}
            if item.metadata.get("metavar"):
                common["metavar"] = item.metadata["metavar"]
            if kind is bool:
                parser.add_argument(flag, action=argparse.BooleanOptionalAction, **common)
            elif kind is list:
                parser.add_argument(flag, action="append", type=element, **common)
            elif kind is tuple:
                parser.add_argument(flag, type=_comma_list(flag, element), **common)
            else:
                parser.add_argument(flag, type=kind, **common)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """Parameters from parsed options: the profile's defaults, then what was given."""
        profile = args.profile or ("quick" if getattr(args, "quick", False) else None)
        if getattr(args, "quick", False) and args.profile not in (None, "quick"):
            raise UsageError("--quick and --profile disagree: give one of them")
        overrides = {item.name: getattr(args, item.name) for item in fields(cls)
                     if item.metadata.get("cli", True) and item.name != "profile"
                     and getattr(args, item.name, None) is not None}
        return cls.for_profile(profile, **overrides)


# --- helpers ------------------------------------------------------------------------------

def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _kind(hint: Any) -> tuple[Any, Any]:
    """(int|float|str|bool|tuple|list, element type) for a field's annotation."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _kind(inner[0])
    origin = typing.get_origin(hint)
    if origin in (tuple, list):
        return origin, typing.get_args(hint)[0]
    return hint, hint


def _check_type(flag: str, value: Any, hint: Any) -> None:
    optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
    if value is None:
        if not optional:
            raise UsageError(f"{flag}: a value is required")
        return
    kind, element = _kind(hint)
    items = value if kind in (tuple, list) else [value]
    if kind in (tuple, list) and not isinstance(value, tuple | list):
        raise UsageError(f"{flag}: expected a list, got {value!r}")
    for one in items:
        want = element if kind in (tuple, list) else kind
        ok = (isinstance(one, bool) if want is bool else
              isinstance(one, int | float) and not isinstance(one, bool) if want is float else
              isinstance(one, want) and not (want is int and isinstance(one, bool)))
        if not ok:
            raise UsageError(f"{flag} {one!r}: expected {want.__name__}")


def _comma_list(flag: str, element: type) -> Any:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            return tuple(element(part) for part in text.split(",") if part.strip() != "")
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"takes comma-separated {element.__name__} values, e.g. 1,2") from None
    parse.__name__ = f"comma-separated {element.__name__} list"
    return parse


def _format_option(name: str, value: Any) -> list[str]:
    flag = _flag(name)
    if value is None:
        return []
    if isinstance(value, bool):
        return [flag if value else "--no-" + name.replace("_", "-")]
    if isinstance(value, list):
        return [part for one in value for part in (flag, str(one))]
    if isinstance(value, tuple):
        return [flag, ",".join(map(str, value))]
    if isinstance(value, float):
        return [flag, repr(value)]  # the shortest text that reads back as the same float
    return [flag, str(value)]
