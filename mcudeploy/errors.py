"""Errors a user can act on. Their message is one sentence; the CLI prints it without a traceback."""


class MCUDeployError(Exception):
    """A problem with the user's input or environment, explained in one sentence."""


class UnsupportedError(MCUDeployError):
    """The model uses an operator or attribute combination mcudeploy does not handle."""


class InvalidModelError(MCUDeployError):
    """The model breaks a rule of ONNX or holds values nothing can run correctly (a NaN weight, a
    zero scale, a tensor no board could hold), as opposed to something mcudeploy merely lacks."""
