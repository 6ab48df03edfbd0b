"""The exceptions of the package; the extension raises them with the library's message."""


class Error(Exception):
    """A metrale call failed; the message is the library's (it names the value that failed)."""


class InvalidArgumentError(Error, ValueError):
    """An argument failed validation (dtype, shape, device, K % 16, scale_2, offsets, ...)."""


class CheckpointError(InvalidArgumentError):
    """A checkpoint is malformed or not what was asked for; the message names file and tensor."""
