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


class Interrupted(KeyboardInterrupt):
    """A lab was told to stop (Ctrl-C during a run on several hosts).

    A KeyboardInterrupt, not a LabError: lab code that handles a failed command
    (`except LabError`) must not carry on after it; it unwinds as after a Ctrl-C.
    """
