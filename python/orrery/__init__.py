"""Orrery: an interactive N-body visualiser with a live simulation behind it.

The simulation lives in :mod:`orrery.engine` (importable without any GUI package); the desktop
viewer and the command line live in :mod:`orrery.app`.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("orrery")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"


def show(*args, **kwargs):
    """Show a run in a Jupyter notebook (JupyterLab or Notebook): a Simulation you step in cells,
    a recording, or a live scenario, with the browser client's controls. See
    :func:`orrery.app.serve.show` (``pip install 'orrery[jupyter]'``)."""
    from .app.serve import show as _show

    return _show(*args, **kwargs)


__all__ = ["__version__", "show"]
