"""One error family (`wmviz.core.errors`), handled once by the command line: an error of the family
is one line and exit 2; anything else is a bug: exit 1, "internal error", and its traceback only
with --debug. No face catches a builtin exception as "bad input"."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

import pytest

import wmviz
from tests.support import paths
from wmviz.cli import commands, main
from wmviz.core.errors import BadInputError, BadValue, BudgetExceeded, Refused, SettingError, WmvizError
from wmviz.disk import OutputError

ROOT = paths.REPO
TRACE = ROOT / "sample_data" / "flink-38477-zero-output.jsonl"


def every_error_class() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of wmviz (the page's and Spark's modules too)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(wmviz.__path__, "wmviz."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


def test_every_error_wmviz_defines_is_of_the_family():
    classes = every_error_class()
    assert len(classes) >= 30
    outside = {name for name, cls in classes.items() if not issubclass(cls, WmvizError)}
    # wmviz.disk sits beside the core on the bottom floor and knows nothing of it; its one error
    # is handled beside the family (commands.told).
    assert outside == {"wmviz.disk.atomic.OutputError"}
    kinds = (BadInputError, BudgetExceeded, Refused, SettingError)
    kindless = {
        name for name, cls in classes.items() if cls is not OutputError and not issubclass(cls, kinds)
    }
    assert kindless == {"wmviz.core.errors.WmvizError"}


def test_a_family_error_carries_where_it_is():
    err = BadValue("not a number", file="t.csv", row=3, column="event_ms")
    assert (err.file_name, err.row_number, err.column_name, str(err)) == (
        "t.csv",
        3,
        "event_ms",
        "not a number",
    )
    assert isinstance(err, ValueError)  # a cell rule that tries a value still catches it


def _except_names(handler: ast.ExceptHandler) -> list[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [
        k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else "?"
        for k in kinds
        if k is not None
    ]


def test_the_command_line_catches_no_builtin_as_bad_input():
    """OSError is the file system's answer about a path (missing, unreadable); KeyboardInterrupt,
    BrokenPipeError and main's last `except Exception` (the bug handler) are not bad input."""
    allowed = {"OSError", "KeyboardInterrupt", "BrokenPipeError"}
    caught = []
    for path in sorted((ROOT / "wmviz" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                names = _except_names(node) if node.type is not None else ["bare"]
                for name in names:
                    if name in set(dir(__import__("builtins"))) - allowed or name == "bare":
                        caught.append(f"{path.name}: {name}")
    assert caught == ["commands.py: Exception"], caught


def test_a_bug_is_exit_1_and_its_traceback_only_with_debug(monkeypatch, capsys):
    def planted(args):
        raise KeyError("planted")

    monkeypatch.setattr(commands, "cmd_validate", planted)
    assert main(["validate", str(TRACE)]) == 1
    _, err = capsys.readouterr()
    assert err.splitlines() == ["internal error: KeyError: 'planted' (run with --debug for the traceback)"]
    assert main(["--debug", "validate", str(TRACE)]) == 1
    _, err = capsys.readouterr()
    assert err.startswith("Traceback (most recent call last):") and "in planted" in err
    assert err.splitlines()[-1] == "internal error: KeyError: 'planted' (run with --debug for the traceback)"


def test_a_builtin_escaping_a_reader_is_a_bug_not_bad_input(monkeypatch, capsys, tmp_path):
    """`import kafka` once caught every ValueError as "your input is wrong": a bug in the reader
    then read as exit 2 and no traceback even under --debug."""
    import wmviz.record.kafka

    dump = tmp_path / "dump.txt"
    dump.write_text("t 0 0 1000\n")
    argv = ["import", "kafka", str(dump), "--parallelism", "1", "--out-of-orderness", "1s"]
    assert main([*argv, "--out", str(tmp_path / "a.jsonl")]) == 0
    capsys.readouterr()

    def planted(path):
        raise ValueError("planted in the reader")

    monkeypatch.setattr(wmviz.record.kafka, "read_dump", planted)
    assert main([*argv, "--out", str(tmp_path / "b.jsonl"), "--debug"]) == 1  # after the command too
    _, err = capsys.readouterr()
    assert "Traceback" in err and err.splitlines()[-1].startswith("internal error: ValueError: planted")


def test_bad_input_is_still_one_line_and_exit_2(capsys, tmp_path):
    dump = tmp_path / "dump.txt"
    dump.write_text("t 0 0 1000\n")
    argv = ["import", "kafka", str(dump), "--parallelism", "1", "--out-of-orderness", "5x"]
    assert main([*argv, "--out", str(tmp_path / "t.jsonl")]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines() == [
        "error: --out-of-orderness '5x': expected a duration such as 500ms, 1s, 10m or 1h30m"
    ]


@pytest.mark.parametrize("kind", [BadInputError, BudgetExceeded, Refused, SettingError])
def test_every_kind_of_the_family_is_exit_2(kind, monkeypatch, capsys):
    def refuse(args):
        raise kind("WMVIZ_X", "y", "z") if kind is SettingError else kind("told in one line")

    monkeypatch.setattr(commands, "cmd_validate", refuse)
    assert main(["--debug", "validate", str(TRACE)]) == 2
    _, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err
