"""Errors a user can act on. Their message is one sentence; the CLI prints it without a traceback."""


class MCUDeployError(Exception):
    """A problem with the user's input or environment, explained in one sentence."""


class UnsupportedError(MCUDeployError):
    """The model uses an operator or attribute combination mcudeploy does not handle."""
