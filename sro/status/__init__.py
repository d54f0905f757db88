"""SpecialResource status, conditions and Events.

``conditions`` computes them (pure); ``writer`` sends them only when they changed.
"""
