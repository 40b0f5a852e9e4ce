"""What the commands write: the format `--out` names (or a refusal), never over an input, and a
full disk as a clean exit 2 that leaves the earlier output as it was."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.record.test_record_rest import FakeJob, _record
from tests.support.kafka_dump import FILE as DUMP
from wmviz.cli import commands as cli
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace

PROM = REPO / "tests" / "data" / "prometheus" / "skewed-sources-query-range.json"
SAMPLE = REPO / "sample_data" / "early-fire-left-join.jsonl"
KAFKA = ["import", "kafka", str(DUMP), "--parallelism", "3", "--out-of-orderness", "5s", "--idleness", "1m",
         "--topic", "shop.orders"]  # fmt: skip
EXTENSIONS = ".csv, .jsonl, .ndjson, .json, .parquet, .pq"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def transcript(capsys, trace: Path, *extra) -> str:
    code, out, err = run_cli(capsys, "transcript", trace, *extra)
    assert code == 0, err
    return out


def work_items(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".wmviz-" in p.name)


# --- --out writes what its extension names ----------------------------------------------------------


def test_an_import_writes_csv_jsonl_or_parquet_as_its_extension_says_and_each_replays_the_same(
    tmp_path, capsys
):
    for name in ("orders.jsonl", "orders.csv", "orders.parquet"):
        code, _, err = run_cli(capsys, *KAFKA, "--out", tmp_path / name)
        assert code == 0, err
    assert (tmp_path / "orders.jsonl").read_bytes().startswith(b'{"config"')
    assert (tmp_path / "orders.csv").read_text().startswith("seq,instance,input,channel,kind,")
    assert (tmp_path / "orders.parquet").read_bytes()[:4] == b"PAR1"
    jsonl = transcript(capsys, tmp_path / "orders.jsonl")
    assert transcript(capsys, tmp_path / "orders.parquet") == jsonl
    assert transcript(capsys, tmp_path / "orders.csv", "--config", tmp_path / "orders.config.json") == jsonl
    assert read_trace(tmp_path / "orders.parquet").config == read_trace(tmp_path / "orders.jsonl").config


def test_a_csv_import_says_where_its_config_went(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "import", "prometheus", PROM, "--vertex", "downstream", "--out",
                           tmp_path / "r.csv")  # fmt: skip
    assert code == 0
    assert f"its config is in {tmp_path / 'r.config.json'} (give it with --config)" in out
    code, out, _ = run_cli(capsys, "explain", tmp_path / "r.csv", "--config", tmp_path / "r.config.json")
    assert code == 0 and "# replay agrees with the job's reported watermark" in out


@pytest.mark.parametrize("name", ["orders.txt", "orders", "orders.jsonl.gz"])
def test_an_extension_that_names_no_trace_format_is_refused_before_anything_is_read(tmp_path, capsys, name):
    for command in (
        [*KAFKA, "--out", tmp_path / name],
        ["import", "prometheus", PROM, "--out", tmp_path / name],
        ["record", "--rest", "http://127.0.0.1:9", "--job", "j", "--vertex", "v", "--out", tmp_path / name],
    ):
        code, _, err = run_cli(capsys, *command)
        assert code == 2 and f"end it in one of {EXTENSIONS}" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_recording_writes_csv_as_it_goes_and_parquet_when_it_ends(serve, tmp_path):
    for name in ("r.csv", "r.parquet"):
        url = serve(FakeJob(["RUNNING"] * 6 + ["FINISHED"]))
        proc = subprocess.run(_record(url, tmp_path / name), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    # A job already over when the recording starts: no sample, and the earlier file stands.
    proc = subprocess.run(_record(url, tmp_path / "r.parquet"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "no sample was taken; nothing written" in proc.stdout
    csv = read_trace(tmp_path / "r.csv", tmp_path / "r.config.json")
    parquet = read_trace(tmp_path / "r.parquet")
    assert parquet.config.channels == csv.config.channels == {"0": 2}
    assert assert_whole_samples(csv, 2) == assert_whole_samples(parquet, 2) == 5


# --- never over an input -------------------------------------------------------------------------


def test_an_import_never_writes_over_the_file_it_reads(tmp_path, capsys):
    dump = tmp_path / "dump.jsonl"  # a dump whose name a trace could have
    dump.write_bytes(DUMP.read_bytes())
    os.link(dump, tmp_path / "hard.jsonl")
    for out in (dump, tmp_path / "hard.jsonl", tmp_path / "sub" / ".." / "dump.jsonl"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, _, err = run_cli(capsys, "import", "kafka", dump, "--parallelism", "3", "--out-of-orderness",
                               "5s", "--topic", "shop.orders", "--out", out)  # fmt: skip
        assert code == 2 and f"is the same file as the dump {dump}" in err, err
        assert dump.read_bytes() == DUMP.read_bytes()
    # A CSV's config goes beside it: that file must not be the input either.
    config_named = tmp_path / "orders.config.json"
    config_named.write_bytes(DUMP.read_bytes())
    command = [*KAFKA[:2], config_named, *KAFKA[3:], "--out", tmp_path / "orders.csv"]
    code, _, err = run_cli(capsys, *command)
    assert code == 2 and "the config of --out" in err and not (tmp_path / "orders.csv").exists()


def test_record_refuses_samples_on_its_own_trace_and_a_bad_samples_path_keeps_the_earlier_recording(
    tmp_path, capsys
):
    earlier = tmp_path / "r.jsonl"
    earlier.write_text("an earlier recording\n" * 80)
    base = ["record", "--rest", "http://127.0.0.1:9", "--job", "j", "--vertex", "v", "--out", earlier]
    code, _, err = run_cli(capsys, *base, "--samples", tmp_path / "." / "r.jsonl")
    assert code == 2 and "--out" in err and "--samples" in err and "are the same file" in err
    code, _, err = run_cli(capsys, *base, "--samples", tmp_path / "missing" / "s.jsonl")
    assert code == 2 and "--samples" in err and "cannot be written" in err
    code, _, err = run_cli(capsys, *base, "--samples", tmp_path)
    assert code == 2 and "is a folder" in err
    assert earlier.read_text() == "an earlier recording\n" * 80


def test_simulate_never_writes_a_folder_that_holds_its_trace(tmp_path, capsys):
    folder = tmp_path / "tl"
    folder.mkdir()
    trace = folder / "t.jsonl"
    trace.write_bytes(SAMPLE.read_bytes())
    code, _, err = run_cli(capsys, "simulate", trace, "--out", folder)
    assert code == 2 and f"--out {folder} holds the trace {trace}" in err
    assert trace.read_bytes() == SAMPLE.read_bytes()


# --- a full disk --------------------------------------------------------------------------------


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return apply


def test_a_write_the_system_refuses_ends_in_exit_2_with_the_old_output_intact(tmp_path):
    """The file-size limit makes every write past 64 KiB fail (EFBIG) in the real CLI, as a full
    disk would (ENOSPC: the tmpfs test below): for an import, a simulate and a recording."""
    out = tmp_path / "orders.jsonl"
    out.write_text("the earlier trace\n")
    command = [sys.executable, "-m", "wmviz", *KAFKA, "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, preexec_fn=_file_size_limit(65536))
    assert proc.returncode == 2 and f"error: cannot write {out}: File too large" in proc.stderr
    assert out.read_text() == "the earlier trace\n" and work_items(tmp_path) == []
    tl = tmp_path / "tl"
    assert cli.main(["simulate", str(SAMPLE), "--out", str(tl)]) == 0
    before = {p: p.read_bytes() for p in tl.rglob("*") if p.is_file()}
    big = tmp_path / "big.jsonl"
    assert cli.main([*KAFKA, "--out", str(big)]) == 0
    command = [sys.executable, "-m", "wmviz", "simulate", str(big), "--out", str(tl)]
    proc = subprocess.run(command, capture_output=True, text=True, preexec_fn=_file_size_limit(65536))
    assert proc.returncode == 2 and f"error: cannot write {tl}: File too large" in proc.stderr
    assert {p: p.read_bytes() for p in tl.rglob("*") if p.is_file()} == before
    assert work_items(tmp_path) == []


def test_a_recording_the_disk_stops_holds_whole_samples_and_exits_2(serve, tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(_record(serve(FakeJob(["RUNNING"])), out), capture_output=True, text=True,
                          timeout=60, preexec_fn=_file_size_limit(6000))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"cannot write {out}: File too large; {out} holds the whole samples taken before" in proc.stderr
    trace = read_trace(out)
    assert_whole_samples(trace, instances=2)
    assert work_items(tmp_path) == []


def assert_whole_samples(trace, instances: int) -> int:
    """Every sample's rows are all there: each instance's last row of a sample carries its number."""
    marked = [dict(r.payload)["sample"] for r in trace.rows if "sample" in dict(r.payload)]
    counts = {int(s): marked.count(s) for s in set(marked)}
    assert sorted(counts) == list(range(len(counts))) and set(counts.values()) == {instances}, counts
    return len(counts)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs (root only: where mounting is not allowed, these tests are skipped; the
    file-size limit test above covers the same paths anywhere)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                                           capture_output=True).returncode:  # fmt: skip
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_exit_2_no_space_left_and_the_old_output_stands(tiny_disk, tmp_path, capsys):
    out = tiny_disk / "orders.jsonl"
    out.write_text("the earlier trace\n")
    code, _, err = run_cli(capsys, *KAFKA, "--out", out)
    assert code == 2 and f"error: cannot write {out}: No space left on device" in err
    assert out.read_text() == "the earlier trace\n" and work_items(tiny_disk) == []
    tl = tiny_disk / "tl"
    assert run_cli(capsys, "simulate", SAMPLE, "--out", tl)[0] == 0
    before = {p: p.read_bytes() for p in tl.rglob("*") if p.is_file()}
    big = tmp_path / "big.jsonl"
    assert run_cli(capsys, *KAFKA, "--out", big)[0] == 0
    code, _, err = run_cli(capsys, "simulate", big, "--out", tl)
    assert code == 2 and f"error: cannot write {tl}: No space left on device" in err
    assert {p: p.read_bytes() for p in tl.rglob("*") if p.is_file()} == before
    assert work_items(tiny_disk) == []
    Timeline(tl).verify()
