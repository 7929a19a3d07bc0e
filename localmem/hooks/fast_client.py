"""The hook command ``localmem hooks install`` writes: ``PYTHON -S .../localmem/hooks/fast_client.py
[--db PATH] [--embedder NAME] hook EVENT``, the same command as ``localmem hook`` (``client.run``).

Why a script run with ``-S``: an assistant runs the hook as a new process before every prompt,
and when the store's warm process answers, starting Python is most of the cost. ``site`` alone
(the site-packages ``.pth`` files, an editable install's import finder) takes longer than the
answer, and a console script adds its own imports. So this file is run by the installing
Python's absolute path without ``site``, puts the folder that holds the ``localmem`` package on
``sys.path`` itself (it is two folders up from here), and imports only the standard-library
client. When no warm process answers, the client turns ``site`` on before it opens the store
(``client._with_site``), so the in-process answer finds apsw and numpy as a normal start would.
"""

import os
import sys


def package_parent(script: str) -> str:
    """The folder holding the ``localmem`` package this script belongs to."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script))))


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    # Python put this script's folder first on sys.path: its modules (settings, events, ...)
    # would shadow top-level modules of the same name. The package's parent goes there instead.
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    sys.path.insert(0, package_parent(__file__))
    from localmem.hooks.client import run

    return run(sys.argv[1:], hard_exit=True)


if __name__ == "__main__":
    sys.exit(main())
