"""Errors a reader can act on.

Anything raised as a LabError reaches the terminal as one line (no traceback)
and sets the exit code: 2 for bad input, 1 for a failure while running.
"""


class LabError(Exception):
    """A failure the user can act on; its message is one line."""

    exit_code = 1


class UsageError(LabError):
    """Bad input on the command line or in a parameter: exit code 2."""

    exit_code = 2
