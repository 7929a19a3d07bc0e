"""The memory browser: a local web page over a MemoryStore (``localmem ui``, ``/ui/`` under serve).

``routes`` are its Starlette routes (mounted by ``http.app.create_app``),
``data`` what they show, ``auth`` the browser sign-in, ``pages/`` the two HTML
pages (served only by their routes, with their security headers) and
``static/`` what they load (plain CSS and JavaScript, no third-party code,
nothing fetched from elsewhere).
"""
