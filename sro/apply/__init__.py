"""Writing desired objects.

``diff`` decides whether an apply would change anything (pure); ``ssa`` sends
server-side apply and deletes.
"""
