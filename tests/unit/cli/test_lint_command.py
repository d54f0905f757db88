"""``sro lint`` on valid recipes and on SpecialResource files, and the other small commands.

Covers: the built-in recipes lint clean; SpecialResource files are checked with their
line numbers and rendered with the recipe they name; ``version``; ``--help`` naming the
environment fallback of every ``run`` flag; and the settings ``run`` builds from flags
and environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sro
from sro import cli

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_built_in_recipes_lint_clean_with_warnings_for_optional_kinds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run(capsys, "lint", "assets/nvidia-gpu", "assets/simple-kmod")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and all(": warning: " in line and "skipped (optional)" in line for line in lines)


def test_a_specialresource_file_is_validated_with_its_line_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "srs.yaml"
    path.write_text(
        "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata: {name: good}\n"
        "spec: {recipe: simple-kmod}\n"
        "---\n"
        "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata: {name: bad}\n"
        "spec: {recipe: simple-kmod, managementState: Sometimes}\n"
    )
    code, out, _ = run(capsys, "lint", str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:6: SpecialResource bad: "
        "spec.managementState 'Sometimes' must be one of Managed, Unmanaged, Removed"
    ]


def test_a_specialresource_is_rendered_with_the_recipe_it_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    path = tmp_path / "sr.yaml"
    path.write_text(
        "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata: {name: gpu}\n"
        "spec:\n  recipe: nvidia-gpu\n  set:\n    driver: null\n"
    )
    code, out, _ = run(capsys, "lint", str(path), "assets/nvidia-gpu")
    assert code == 1
    assert out == f"{path}:6: SpecialResource gpu: spec.set: 'driver' is a required property\n"


def test_a_duplicate_key_in_a_specialresource_file_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "sr.yaml"
    path.write_text(
        "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata: {name: a}\nspec: {}\nspec: {}\n"
    )
    code, out, _ = run(capsys, "lint", str(path))
    assert (code, out.strip()) == (1, f"{path}:5: invalid YAML: duplicate key 'spec' (first at line 4)")


def test_a_missing_path_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "/nonexistent/recipe")
    assert (code, out.strip()) == (1, "/nonexistent/recipe: no such file or directory")


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "version")[:2] == (0, f"sro {sro.__version__}\n")


def test_run_help_names_every_flag_and_its_environment_variable(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag, env in [
        ("--namespace", "SRO_NAMESPACE"),
        ("--recipes", "SRO_RECIPE_DIRS"),
        ("--metrics-bind-address", "SRO_METRICS_BIND_ADDRESS"),
        ("--metrics-addr", "SRO_METRICS_ADDR"),
        ("--health-probe-bind-address", "SRO_HEALTH_PROBE_BIND_ADDRESS"),
        ("--health-addr", "SRO_HEALTH_ADDR"),
        ("--kubeconfig", "KUBECONFIG"),
        ("--context", "SRO_CONTEXT"),
        ("--leader-elect", "SRO_LEADER_ELECT"),
        ("--log-format", "SRO_LOG_FORMAT"),
        ("--log-level", "SRO_LOG_LEVEL"),
        ("--workers", "SRO_WORKERS"),
        ("--http-proxy", "SRO_HTTP_PROXY"),
        ("--https-proxy", "SRO_HTTPS_PROXY"),
        ("--no-proxy", "SRO_NO_PROXY"),
    ]:
        assert flag in text and f"env {env}" in text


def test_run_settings_come_from_flags_with_environment_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SRO_WORKERS", "9")
    monkeypatch.setenv("SRO_LEADER_ELECT", "false")
    monkeypatch.setenv("SRO_NAMESPACE", "ops")
    args = cli.build_parser().parse_args(["run", "--health-addr", "0.0.0.0:9090", "--log-format", "json"])
    settings = cli.run_settings(args)
    assert settings.controller.workers == 9
    assert settings.lease.enabled is False and settings.lease.namespace == "ops"
    assert (settings.server.address, settings.server.port) == ("0.0.0.0", 9090)
    assert (settings.server.metrics_address, settings.server.metrics_port) == ("", 8080)
    assert settings.log.format == "json" and settings.log.level == "info"


def test_render_without_a_node_source_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli.main(["render", "--recipe", "assets/simple-kmod", "--sr", "tests/golden/simple-kmod.sr.yaml"])
        == 2
    )
    assert "one of --nodes or --live are required" in capsys.readouterr().err


def test_lint_of_every_entry_of_assets_passes_and_skips_what_is_not_yaml(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    entries = sorted(str(p.relative_to(REPO)) for p in (REPO / "assets").iterdir())
    code, out, _ = run(capsys, "lint", *entries)
    assert code == 0, out
    assert (
        "assets/README.md: warning: neither a recipe directory nor a YAML file; skipped" in out.splitlines()
    )


def test_render_of_a_broken_recipe_exits_1_naming_the_file_and_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, out, err = run(
        capsys,
        "render",
        "--recipe",
        "tests/recipes/broken/undefined-value",
        "--sr",
        "tests/golden/simple-kmod.sr.yaml",
        "--nodes",
        "tests/golden/inventory.yaml",
    )
    assert (code, out) == (1, "")
    assert err.strip() == (
        "sro render: tests/recipes/broken/undefined-value/one/configmap.yaml:6: "
        "undefined value: 'dict object' has no attribute 'driverVersion'"
    )


def test_metrics_and_probes_are_served_apart_on_controller_runtime_s_ports_by_default() -> None:
    server = cli.run_settings(cli.build_parser().parse_args(["run"])).server
    assert (server.metrics_address, server.metrics_port, server.metrics) == ("", 8080, True)
    assert (server.address, server.port) == ("", 8081)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--metrics-addr", "0.0.0.0:9100"], ("", 8081, "0.0.0.0", 9100, True)),
        (["--metrics-bind-address", "0"], ("", 8081, "127.0.0.1", None, False)),
        (
            ["--health-addr", "[::1]:9000", "--metrics-addr", "[::1]:9000"],
            ("::1", 9000, "127.0.0.1", None, True),
        ),
        (["--health-probe-bind-address", "0"], ("", None, "", 8080, True)),
    ],
)
def test_bind_addresses_and_their_aliases_reach_the_server_settings(
    argv: list[str], expected: tuple[object, ...]
) -> None:
    s = cli.run_settings(cli.build_parser().parse_args(["run", *argv])).server
    assert (s.address, s.port, s.metrics_address, s.metrics_port, s.metrics) == expected


def test_operator_flags_reach_the_settings_without_touching_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SRO_IMAGE", "registry.example/sro:1")
    args = cli.build_parser().parse_args(
        ["run", "--namespace", "ops", "--recipes", "/a:/b", "--https-proxy", "http://proxy:3128"]
    )
    before = dict(os.environ)
    op = cli.run_settings(args).operator
    assert (op.namespace, op.recipe_dirs, op.image) == ("ops", ("/a", "/b"), "registry.example/sro:1")
    assert (op.http_proxy, op.https_proxy) == ("", "http://proxy:3128")
    assert dict(os.environ) == before
