"""Hostile recipe directories and SpecialResources.

The strategies build what a careless or malicious recipe author could hand sro: garbled
``recipe.yaml``, templates mixing random Jinja constructs, YAML with anchors, aliases,
merge keys, deep nesting, huge scalars, tags, non-UTF-8 and NUL bytes, and
``spec.set`` values full of quotes, newlines, brackets and YAML punctuation. ``Case``
writes one out as a recipe directory and a SpecialResource file; ``sro_child.run_sro``
runs sro on them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

# -- text -----------------------------------------------------------------------------------

YAML_PUNCTUATION = [
    "'",
    '"',
    "\n",
    "[",
    "]",
    "{",
    "}",
    "---",
    "...",
    "&a",
    "*a",
    "<<",
    ": ",
    "- ",
    "#",
    "!!",
    "|",
    ">",
    "%",
    "@",
    "`",
    "\\",
    "\t",
    "\r",
    "\x00",
    "\u2028",
    "\ufeff",
    "{{",
    "}}",
    "{%",
    "%}",
]
nasty_text = st.lists(st.one_of(st.sampled_from(YAML_PUNCTUATION), st.text(max_size=8)), max_size=12).map(
    "".join
)

set_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        nasty_text,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(nasty_text, st.just("name")), inner, max_size=4),
    ),
    max_leaves=12,
)

# -- YAML that fights back ----------------------------------------------------------------------


def _deep(depth: int, *, flow: bool) -> str:
    if flow:
        return "a: " + "[" * depth + "]" * depth + "\n"
    return "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + "  " * depth + "x\n"


def _laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


yaml_bombs = st.one_of(
    st.integers(min_value=1, max_value=3000).flatmap(lambda d: st.booleans().map(lambda f: _deep(d, flow=f))),
    st.integers(min_value=2, max_value=9).map(_laughs),
    st.just("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n"),
    st.just("a: &r [*r]\n"),
    st.just("a: !!python/object/apply:os.system ['true']\n"),
    st.just("a: !!binary aGVsbG8=\nb: !!set {x}\nc: !!omap [{a: 1}]\nd: 2001-12-14t21:59:43.10-05:00\n"),
    st.just("? [complex, key]\n: value\n"),
    st.just("%YAML 1.1\n%TAG ! tag:x,2000:\n---\n!x a: 1\n"),
    st.just('a: "\\ud800"\nb: 1e999999\nc: 0x' + "f" * 5000 + "\n"),
    st.integers(min_value=1, max_value=900_000).map(lambda n: "a: " + "x" * n + "\n"),
    st.integers(min_value=1, max_value=50_000).map(lambda n: "a: [" + "1, " * n + "]\n"),
)

JINJA = [
    "{{ set.x }}",
    "{{ set | tojson }}",
    "{{ set.x | tojson }}",
    "{{ kernel.full }}",
    "{{ sr.name }}",
    "{{ undefined_thing.x }}",
    "{{ ().__class__.__mro__ }}",
    "{{ lipsum() }}",
    "{{ cycler(1) }}",
    "{{ joiner() }}",
    "{{ namespace(a=1) }}",
    "{{ self }}",
    '{{ "a" * 100000000 }}',
    "{{ [1] * 100000000 }}",
    "{{ 9 ** 999999 }}",
    "{{ 1 / 0 }}",
    '{{ "x" | center(2000000000) }}',
    '{{ "x" | indent(2000000000) }}',
    '{{ "%*d" % (999999999, 1) }}',
    '{{ "{0:>999999999}".format(1) }}',
    "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
    "{{ 1 }}" * 6000,
    "{% set c = ({'k': (1 ~ ({'k': 1} | attr('x')))} != 1) %}",
    "{{ range(100000000) | list }}",
    "{% for i in range(100000) %}{{ i }}{% endfor %}",
    '{% set s = "ab" %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}',
    "{% include 'x.yaml' %}",
    "{% extends 'x.yaml' %}",
    "{% import 'x' as y %}",
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
    "{% filter upper %}x{% endfilter %}",
    "{% raw %}{{ x }}{% endraw %}",
    "{% do x %}",
    "{% if %}",
    "{{",
    "}}",
    "{% for %}",
    "{% endfor %}",
    "{{ set.items() | list }}",
    "{{ {}.update(a=1) }}",
    '{{ "a".format_map }}',
    "{{ set.__class__.__init__.__globals__ }}",
    "{# comment #}",
    "{{ '\\n---\\n' }}",
    "{{ [[1] * 100000] * 100000 }}",
    "{{ ([[1] * 100000] * 100000) | tojson }}",
    "{% set a = [1, 1] %}" + "{% set a = [a, a] %}" * 30 + "{{ a ~ '' }}",
    "{% set a = 1 %}" + "{% set a = [a] %}" * 150 + "{{ a }}",
    "{% set a = (1, 1) %}" + "{% set a = (a, a) %}" * 40 + "{{ {a: 1} | length }}",
    "{% set a = [1] %}{% set b = [1] %}" + "{% set a = [a, a] %}{% set b = [b, b] %}" * 40 + "{{ a == b }}",
    '{{ "{0:>999999999}".format(1) }}',
    '{{ "{a:>999999999}".format_map({"a": 1}) }}',
    "{{ 'a: &x [*x]' }}",
]
jinja_text = st.lists(st.one_of(st.sampled_from(JINJA), nasty_text), min_size=1, max_size=4).map("".join)

DOCUMENT = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {namespace}
  annotations:
    {annotation}
data:
  a: "{value}"
  b: {value}
"""
annotations = st.sampled_from(
    [
        'sro.dev/wait-for-logs: "(a+)+$"',
        'sro.dev/wait-for-logs: "(?=x)"',
        'sro.dev/wait-for-logs: "(x"',
        'sro.dev/per-node: "true"',
        'sro.dev/kernel-affine: "true"',
        "sro.dev/wait: maybe",
        "sro.dev/unknown: x",
        'x: "y"',
    ]
)
templated_documents = st.builds(
    DOCUMENT.format,
    name=st.one_of(st.just("cm"), jinja_text, nasty_text),
    namespace=st.one_of(st.just("x"), jinja_text),
    annotation=annotations,
    value=jinja_text,
)
VALUES_DOCUMENT = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ds-{{{{ set.x | default("d") | length }}}}
  annotations:
    {annotation}
spec:
  selector:
    matchLabels: {{app: ds}}
  template:
    metadata:
      labels: {{app: ds}}
    spec:
      containers:
        - name: main
          image: "{{{{ set.x }}}}"
          args: [{{{{ set.x }}}}, "{{{{ set.y }}}}", {{{{ set | tojson }}}}]
          env:
            - name: X
              value: {{{{ set.x }}}}
            - name: Y
              value: |
                {{{{ set.y }}}}
"""
values_documents = st.builds(VALUES_DOCUMENT.format, annotation=annotations)
raw_bytes = st.one_of(
    st.binary(max_size=300),
    st.just(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \xff\xfe\n"),
    st.just(b"apiVersion: v1\x00\nkind: ConfigMap\n"),
    st.just("\ufeffapiVersion: v1\n".encode()),
)

file_contents = st.one_of(
    templated_documents.map(str.encode),
    values_documents.map(str.encode),
    values_documents.map(str.encode),
    yaml_bombs.map(str.encode),
    st.lists(st.one_of(templated_documents, yaml_bombs), min_size=2, max_size=3)
    .map("---\n".join)
    .map(str.encode),
    jinja_text.map(str.encode),
    raw_bytes,
)

state_names = st.one_of(
    st.sampled_from(["s0", "s1", "state-driver", "complete", "a" * 41, "Bad_Name", "", "x/y"]),
    st.text(max_size=10),
)


odd_json = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.sampled_from(["s0", "s1", "", "x" * 300]), nasty_text
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(nasty_text, inner, max_size=3)),
    max_leaves=6,
)
"""Any JSON value, for fields that expect something else."""

SPEC_FIELDS = ("nodeSelector", "namespace", "taints", "priorityClasses", "dependencies", "managementState")
GOOD_SPEC = {
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    "priorityClasses": [{"name": "gpu-high", "value": 1000}],
    "nodeSelector": {"feature.node.kubernetes.io/pci-10de.present": "true"},
}
spec_extras = st.dictionaries(
    st.sampled_from(SPEC_FIELDS), st.one_of(odd_json, st.sampled_from(list(GOOD_SPEC.values()))), max_size=3
)


@st.composite
def recipe_headers(draw: st.DrawFn, states: list[str]) -> bytes:
    kind = draw(st.sampled_from(["valid"] * 6 + ["garbled", "bomb", "bytes", "many"]))
    if kind == "valid":
        entries = "".join(
            f"  - name: {json.dumps(s)}\n"
            + draw(st.sampled_from(["", "", f"    after: {json.dumps(draw(odd_json))}\n"]))
            for s in states
        )
        selector = draw(
            st.sampled_from(
                [
                    "",
                    "",
                    "nodeSelector:\n  feature.node.kubernetes.io/pci-10de.present: 'true'\n",
                    "nodeSelector: " + json.dumps(draw(odd_json)) + "\n",
                ]
            )
        )
        defaults = "defaults: " + json.dumps(draw(st.dictionaries(nasty_text, set_values, max_size=3))) + "\n"
        return (selector + defaults + "states:\n" + entries).encode()
    if kind == "many":
        count = draw(st.integers(min_value=60, max_value=200))
        return ("states:\n" + "".join(f"  - name: s{i}\n" for i in range(count))).encode()
    if kind == "garbled":
        return draw(st.one_of(nasty_text, jinja_text)).encode("utf-8", "surrogatepass")
    if kind == "bomb":
        return draw(yaml_bombs).encode()
    return draw(raw_bytes)


@dataclass(frozen=True)
class Case:
    """A recipe directory's files (relative path -> bytes) and a SpecialResource's ``spec.set``."""

    files: dict[str, bytes]
    set_values: object
    ascii_only: bool = True  # the SpecialResource file escapes every non-ASCII character
    spec: dict[str, object] = field(default_factory=dict)  # more of the SpecialResource's spec

    def write(self, root: Path, name: str) -> tuple[Path, Path]:
        """The recipe directory ``root/name`` and a SpecialResource file using it."""
        recipe = root / name
        recipe.mkdir()
        for rel, data in self.files.items():
            path = recipe / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        body = {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": name},
            "spec": {**self.spec, "recipe": name, "set": self.set_values},
        }
        sr = root / f"{name}.sr.yaml"
        text = json.dumps(body, ensure_ascii=self.ascii_only)
        sr.write_text(text, encoding="utf-8", errors="surrogatepass")
        return recipe, sr


GOOD_STATES = st.lists(
    st.sampled_from(["s0", "s1", "s2", "state-driver"]), min_size=1, max_size=3, unique=True
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    states = draw(st.one_of(GOOD_STATES, GOOD_STATES, st.lists(state_names, min_size=1, max_size=3)))
    files = {"recipe.yaml": draw(recipe_headers(states))}
    for state in states:
        if not state or "/" in state or state in (".", "..") or "\x00" in state:
            continue
        for index in range(draw(st.integers(min_value=0, max_value=2)) or 1):
            files[f"{state}/doc{index}.yaml"] = draw(file_contents)
    values = draw(st.fixed_dictionaries({"x": set_values, "y": set_values}, optional={"z": nasty_text}))
    values.update(draw(st.dictionaries(nasty_text, set_values, max_size=2)))
    return Case(
        files=files,
        set_values=values,
        ascii_only=draw(st.booleans()) or draw(st.booleans()),
        spec=draw(spec_extras),
    )
