"""The one base class for a user's mistake.

A `UserError` is raised for something the user can fix (a params value, a missing or unreadable input, an endpoint
that cannot take the load): its message says what is wrong, where (file, row, section, key) and what to do. The CLI
prints it as one line and exits 2, with no traceback (`--debug` shows it). Anything else is a bug and keeps its
traceback.
"""


class UserError(Exception):
    """A mistake the user can fix; the message is the whole report, on one line."""


def is_user_error(exc: BaseException) -> bool:
    """Mistakes in params, paths or names, whose message already says what to fix: a UserError (a params error, an
    unknown labeler and vLLM that cannot load are UserErrors too) or a missing file or folder."""
    return isinstance(exc, (UserError, FileNotFoundError, NotADirectoryError))
