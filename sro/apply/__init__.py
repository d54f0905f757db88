"""Writing desired objects.

``diff`` decides whether an apply would change anything (pure: desired hash plus
field-by-field drift check); ``ssa`` sends server-side apply, status, deletes and dry
runs for any kind through discovery.
"""
