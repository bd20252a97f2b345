"""stax.plugins() and stax.cache: the backends on the plugin path and the kernel cache."""
from . import _config, _stax


def plugins(config="cpu"):
    """The backend plugins on the config's plugin path (``stax plugins``): one dict per plugin
    with name, path, abi, version, device_kind, device_name, thresholds (§6.6, with the config's
    overrides), extern_kernels, configured_for (the config's devices it serves) and error (None,
    or why it failed to load or configure)."""
    return _stax._plugins(_config.resolve(config))


class Cache:
    """The persistent kernel cache (``stax cache``): the config's cache_dir, overridden by
    STAX_CACHE_DIR (``off`` disables it, as ``cache: off`` does)."""

    def dir(self, config="cpu"):
        """The cache directory, or None when the cache is off."""
        return _stax._cache_dir(_config.resolve(config))

    def stats(self, config="cpu"):
        """{enabled, dir, entries, bytes, max_bytes}"""
        return _stax._cache_stats(_config.resolve(config))

    def clear(self, config="cpu"):
        """Removes every cached kernel; returns how many files were removed."""
        return _stax._cache_clear(_config.resolve(config))

    def __repr__(self):
        return "<stax.cache: dir(), stats(), clear()>"


cache = Cache()
