"""stax.Error: every failure Stax reports (bad input, a config, a plugin, a compile)."""


class Error(RuntimeError):
    """A Stax error, raised with the C++ message text ``"LOCATION: error: MESSAGE"``.

    Attributes:
        stage: the stage that failed: ``"parse"``, ``"config"``, ``"plugin"``, ``"lower"``,
            ``"compile"``, ``"runtime"``, ``"input"`` (a tensor handed in from Python), ...
        location: where: ``"file.stax:3:17"``, ``"%add"``, a plugin path, an input's name.
        message: the cause, without the location.
    """

    def __init__(self, text, stage="", location="", message=""):
        super().__init__(text)
        self.stage = stage
        self.location = location
        self.message = message or text


Error.__module__ = "stax"
