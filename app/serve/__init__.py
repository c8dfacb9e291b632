"""The server: the Dash app and its wiring (``server``), what it refuses before the app
sees a request (``guard``, ``protocol``, ``inputs``), and a browser for tests."""
