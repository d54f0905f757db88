"""Jinja's code generator, with what a template builds sent through the environment.

The sandbox sees calls, attribute lookups and some operators, but Jinja compiles ``~`` and
list, tuple and dict literals to plain Python, which no budget would see: ``~`` could join
gigabytes, and ``{% set a = [a, a] %}`` written forty times is a list of a trillion
leaves in a few KB of memory, which Python then compares, hashes or prints in C, holding
the interpreter past every clock. So ``~`` goes to ``environment.join_checked`` and every
literal to ``environment.built``, which refuses a value that would print to more than one
value may have (``sro.render.printed``). With every value a template can build so
bounded, comparing, hashing and printing any of them is bounded too.
"""

from __future__ import annotations

import jinja2.compiler
import jinja2.nodes


class CodeGenerator(jinja2.compiler.CodeGenerator):
    def visit_Concat(self, node: jinja2.nodes.Concat, frame: jinja2.compiler.Frame) -> None:
        self.write("environment.join_checked((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit_Tuple(self, node: jinja2.nodes.Tuple, frame: jinja2.compiler.Frame) -> None:
        if node.ctx != "load":  # an assignment's target ({% set a, b = ... %}) builds nothing
            super().visit_Tuple(node, frame)
            return
        self.write("environment.built(")
        super().visit_Tuple(node, frame)
        self.write(")")

    def visit_List(self, node: jinja2.nodes.List, frame: jinja2.compiler.Frame) -> None:
        self.write("environment.built(")
        super().visit_List(node, frame)
        self.write(")")

    def visit_Dict(self, node: jinja2.nodes.Dict, frame: jinja2.compiler.Frame) -> None:
        self.write("environment.built(")
        super().visit_Dict(node, frame)
        self.write(")")
