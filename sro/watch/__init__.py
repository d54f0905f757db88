"""Raw watch streams: list, then watch, resume, relist on expiry.

``events`` parses stream lines (pure); ``backoff`` is the retry schedule (pure, clock
injected); ``reflector`` owns the HTTP stream and its resumption rules and feeds a
store from ``sro.cache``, handing each change to a callback.
"""
