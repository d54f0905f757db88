"""Recipes and templates.

Pure: loading and validating recipes (from directories, ConfigMap data or the built-in
assets), rendering their documents in Jinja2's sandbox under limits, and the template
values. No network access: cluster facts arrive as arguments. Nothing here knows about
hooks; ``sro.hooks.pipeline`` composes the two.
"""
