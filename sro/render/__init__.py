"""Recipes and templates.

Pure. Loading and validating a recipe directory, rendering its documents with
Jinja2's sandbox. No network access: cluster facts arrive as arguments.
"""
