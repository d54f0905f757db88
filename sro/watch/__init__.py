"""Raw watch streams: list, then watch, resume, relist on expiry.

``events`` parses stream lines (pure); ``reflector`` owns the HTTP stream and its
resumption rules and feeds a cache.
"""
