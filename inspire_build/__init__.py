"""inspire-build: build INSPIRE-style literature-search benchmarks and score agents on them."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("inspire-build")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
