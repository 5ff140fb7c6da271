"""The errors caused by what a user passed (a flag, a file, a directory), which command lines report in one line."""


class UserError(Exception):
    """Bad input, not a bug: the message names the problem and the fix, so no traceback is needed to act on it."""


class UsageError(UserError, ValueError):
    """A flag value or a combination of flags that cannot work; the message names the flag and a value that does."""


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named that does not exist."""


class Diverged(UserError, FloatingPointError):
    """The loss (pretraining's or fine-tuning's) became NaN or infinite; the message names the step and the
    settings to change."""
