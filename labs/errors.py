"""Errors a reader can act on.

Anything raised as a LabError reaches the terminal as one line (no traceback)
and sets the exit code: 2 for bad input, 1 for a failure while running.
"""

import sys


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


def unwinding_from_an_interrupt(interrupt: BaseException | None = None) -> bool:
    """True inside an except or finally block (or code it calls) that handles a
    KeyboardInterrupt (exactly `interrupt`, when given), or an error raised while handling
    one: the lab is already stopping, and its teardown must not be stopped a second time
    by the same Ctrl-C."""
    error = sys.exc_info()[1]
    while error is not None:
        if error is interrupt if interrupt is not None else isinstance(error, KeyboardInterrupt):
            return True
        error = error.__context__
    return False
