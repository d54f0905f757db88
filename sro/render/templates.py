"""Jinja2 in its sandbox, with undefined values as errors and a budget per recipe render.

The author of a SpecialResource controls ``set`` but may not be the author of the recipe,
so a template must not be able to run long, produce huge output, reach Python internals
or turn a value into YAML structure. The sandbox (``sro.render.sandbox``) blocks the
internals and sizes every operation that could allocate before it runs; the ``Budget``
(``sro.render.budget``: time, output, scratch memory, loop turns) is shared by every
template of one render; and every ``{{ expression }}`` renders to a placeholder that
takes its value only once the YAML is parsed (``sro.render.placeholders``). Templates
are compiled once, when a recipe is loaded; errors carry the template's line mapped back
into its file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.exceptions

from sro import errors
from sro.render import budget as budget_
from sro.render import placeholders, sandbox

Limits = budget_.Limits
Budget = budget_.Budget


def environment() -> jinja2.Environment:
    """The environment every recipe template is compiled in."""
    return sandbox.Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )


_ENV = environment()


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """A rendered document: YAML text with a token for each value, and the values."""

    text: str
    table: placeholders.Table

    def plain(self) -> str:
        """The text with every value printed in place, as Jinja alone would render it."""
        return self.table.expand(self.text)


@dataclass(frozen=True, kw_only=True)
class Compiled:
    """One compiled document template and where its text starts in its file."""

    template: jinja2.Template
    location: errors.Location  # the document's first line

    def render(self, values: Mapping[str, Any], *, budget: Budget) -> str:
        """The text as Jinja alone would render it (values printed in place), under ``budget``."""
        return self.render_tokens(values, budget=budget).plain()

    def render_tokens(self, values: Mapping[str, Any], *, budget: Budget) -> Rendered:
        """Render under ``budget`` with a placeholder for each value; any failure is a
        TemplateError at the template's line."""
        table = placeholders.Table()
        token = budget_.activate(budget)
        tokens = placeholders.activate(table)
        parts: list[str] = []
        try:
            for chunk in self.template.generate(**values):
                budget.spend(len(chunk))
                parts.append(chunk)
        except budget_.OverBudget as exc:
            raise errors.TemplateError(
                str(exc), location=self._at(_template_line(exc, self.template))
            ) from None
        except jinja2.UndefinedError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"undefined value: {exc.message}", location=self._at(line)) from None
        except jinja2.exceptions.SecurityError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(
                f"not allowed in the sandbox: {exc}", location=self._at(line)
            ) from None
        except jinja2.TemplateError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"template error: {exc}", location=self._at(line)) from None
        except RecursionError:
            raise errors.TemplateError(
                "recursion too deep (a macro calling itself?)", location=self.location
            ) from None
        except MemoryError:
            raise errors.TemplateError("out of memory while rendering", location=self.location) from None
        except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"{type(exc).__name__}: {exc}", location=self._at(line)) from None
        finally:
            placeholders.deactivate(tokens)
            budget_.deactivate(token)
        return Rendered(text="".join(parts), table=table)

    def _at(self, template_line: int) -> errors.Location:
        return errors.Location(file=self.location.file, line=self.location.line + max(template_line, 1) - 1)


MAX_TAGS = 5000
"""Template tags (``{{ }}``, ``{% %}``) in one document. A real document has dozens;
compiling is work no render budget sees (140,000 tags took 10 s and 700 MiB)."""
MAX_RECIPE_TAGS = 20_000
"""Template tags in all the documents of one recipe, for the same reason."""


def tag_count(text: str) -> int:
    """How many template tags ``text`` opens."""
    return text.count("{{") + text.count("{%")


def compile_document(text: str, *, location: errors.Location) -> Compiled:
    """Compile one document; a syntax error is a TemplateError at its line in the file."""
    if tag_count(text) > MAX_TAGS:
        raise errors.TemplateError(
            f"more than {MAX_TAGS} template tags ({{{{ }}}}, {{% %}}) in one document", location=location
        )
    try:
        template = _ENV.from_string(sandbox.prepare(_ENV.parse(text)))
    except jinja2.TemplateSyntaxError as exc:
        line = location.line + (exc.lineno or 1) - 1
        raise errors.TemplateError(
            f"template syntax error: {exc.message}", location=errors.Location(file=location.file, line=line)
        ) from None
    except (RecursionError, MemoryError, SyntaxError):  # Jinja's parser or Python's compiler gave up
        raise errors.TemplateError("the template nests too deeply to compile", location=location) from None
    except jinja2.UndefinedError as exc:  # met while Jinja folds constants, e.g. {{ {} | attr('x') ~ '' }}
        raise errors.TemplateError(f"undefined value: {exc.message}", location=location) from None
    except (jinja2.TemplateError, ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
        raise errors.TemplateError(f"{type(exc).__name__}: {exc}", location=location) from None
    return Compiled(template=template, location=location)


def _template_line(exc: BaseException, template: jinja2.Template) -> int:
    """The template line an exception was raised at, from Jinja's rewritten traceback."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    if line:
        return line
    lines = getattr(exc, "lineno", None)
    return int(lines) if isinstance(lines, int) else 1
