"""The memory browser: a local web page over a MemoryStore (``localmem ui``, ``/ui/`` under serve).

``routes`` are its Starlette routes (mounted by ``http.app.create_app``),
``data`` what they show, ``auth`` the browser sign-in, ``static/`` the page
itself (plain HTML, CSS and JavaScript, no third-party code, nothing fetched
from elsewhere).
"""
