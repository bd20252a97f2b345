"""Where the package's files are, and configs from a name, a path or a dict."""
import json
import os

from . import _stax
from ._errors import Error

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _first_dir(*candidates):
    for d in candidates:
        if d and os.path.isdir(d):
            return d
    return None


def configs_dir():
    """The shipped configs: the wheel's stax/configs, else the source tree's configs/."""
    return _first_dir(os.path.join(_PACKAGE_DIR, "configs"),
                      os.path.join(_stax._source_dir, "configs"))


def plugin_dir():
    """The plugins this package runs: the wheel's stax/plugins, else the build tree's."""
    return _first_dir(os.path.join(_PACKAGE_DIR, "plugins"), _stax._build_plugin_dir)


def cmake_dir():
    """-DStaxSDK_DIR for plugins built out of tree (wheel: stax/lib/cmake/StaxSDK)."""
    return _first_dir(os.path.join(_PACKAGE_DIR, "lib", "cmake", "StaxSDK"),
                      os.path.join(os.path.dirname(_stax._build_plugin_dir), "StaxSDK"))


def shipped_configs():
    """The names stax.Compiler(config=NAME) accepts: "cpu", "cuda_emulated", ..."""
    d = configs_dir()
    if not d:
        return []
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml"))


def _error(stage, location, message):
    return Error(f"{location}: error: {message}", stage, location, message)


def _looks_like_path(s):
    return os.sep in s or s.endswith((".yaml", ".yml")) or os.path.exists(s)


def resolve(config):
    """A _stax.Config for `config`: a shipped name ("cpu"), a YAML file path, a dict (the YAML
    keys: devices, plugin_path, realization, cache_dir, cache, dump, default_device) or a
    Config. The package's plugin directory is searched first."""
    if config is None:
        config = "cpu"
    if isinstance(config, _stax.Config):
        cfg = config
    elif isinstance(config, dict):
        try:
            text = json.dumps(config)  # JSON is YAML
        except TypeError as e:
            raise _error("config", "<dict>", f"the config dict is not plain data: {e}") from None
        cfg = _stax.Config.parse(text, "<dict>", os.getcwd())
    elif isinstance(config, (str, os.PathLike)):
        s = os.fspath(config)
        if _looks_like_path(s):
            if not os.path.isfile(s):
                raise _error("config", s, "no such config file")
            cfg = _stax.Config.load(s)
        else:
            names = shipped_configs()
            if s not in names:
                raise _error("config", s, "no shipped config named '" + s + "' (shipped: " +
                             ", ".join(names) + "; or give a YAML path or a dict)")
            cfg = _stax.Config.load(os.path.join(configs_dir(), s + ".yaml"))
    else:
        raise _error("config", type(config).__name__,
                     "a config is a shipped name, a YAML path, a dict or a stax.Config")
    own = plugin_dir()
    if own and own not in cfg.plugin_path[:1]:
        cfg.prepend_plugin_dir(own)
    return cfg
