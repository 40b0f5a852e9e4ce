"""Seeded hostile links, what-if tokens and bundles, and how each runs: the app's pure readers.

* `url`: query parameters through `wmviz.view.url.parse_view`, then what the page does with the view
  it names: the time format in its zone, the step clamped, a `compare=whatif:<token>` decoded and
  applied to the incident's trace. A bad value must fall back with a note, or end in the
  ValueError the page shows as a notice.
* `whatif`: tokens through `wmviz.analysis.whatif_token.decode_edit` (bodies of every operation with
  values of the wrong type, deep JSON, not base64, over the limit), applied, described and written
  as the what-if trace, which must read back; a decoded edit must encode to a token that decodes
  to the same edit (else "round trip").
* `bundle`: zips through `wmviz.store.bundles.open_bundle` (the reading function, not the page):
  members missing, doubled, of other compression methods, damaged, inflating past the limit, many
  empty members, and `view.json` with hostile fields; a bundle that opens is stored and its view
  adopted as `_adopt_view` does. An UploadError is the clean error.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import random
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz_cli import SurfaceCase
from fuzz_inputs import REPO, Raw, dump_json
from fuzz_inputs import _mutate_bytes as mutate_bytes
from fuzz_pool import ACCEPTED, CLEAN, MEMORY, ROUND_TRIP, TRACEBACK, UNREADABLE, Outcome, describe

INCIDENT = "late-data-allowed-lateness"
ZONES = [
    "UTC", "Europe/Berlin", "America/New_York", "Europe", "Europe/", "America", "Etc", "Etc/GMT+5",
    "x" * 300, "Z" * 300 + "/" + "Y" * 300, "../../../etc/passwd", "/etc/localtime", "posixrules",
    "zone.tab", "tzdata.zi", "", " ", "\x00", "Europe/Berlin\x00", "é", "\ud800", "UTC/..", "..", ".",
    "Factory", "localtime",
]  # fmt: skip
TEXTS = ["", " ", "0", "-1", "٣", "𝟙", "1" * 400, "x" * 5000, "\x00", "\ud800", "<b>", "%", "../x"]
OPS = ("insert", "delete", "change", "configure")
FIELD_VALUES: list[Any] = [
    None, 0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**400, 1.5, float("inf"), True, "x", "",
    "٣", "record", "watermark", "status", "IDLE", "MAX", [], {}, [[]], {"a": 1}, "\ud800",
]  # fmt: skip
FIELD_NAMES = ["kind", "input", "channel", "watermark_ms", "status", "event_ms", "key", "value", "proc_ms",
               "payload", "seq", "row", "instance", "generator.out_of_orderness_ms", "operator.size_ms",
               "profile", "channels.0", "operator", ""]  # fmt: skip


def first_line(err: BaseException) -> str:
    """An error's message as an outcome's note: its first line, cut to 300 characters."""
    return str(err).splitlines()[0][:300] if str(err) else type(err).__name__


def judged(run: Callable[[], object], clean: tuple[type[BaseException], ...]) -> Outcome:
    """Run one input: the `clean` errors are the page's own notices, MemoryError is over memory,
    any other exception a traceback, and no error accepted."""
    try:
        run()
    except clean as err:
        return CLEAN, first_line(err)
    except MemoryError:
        return MEMORY, "MemoryError"
    except Exception as err:
        return TRACEBACK, describe(err)
    return ACCEPTED, ""


def _rng(target: str, seed: int, index: int) -> random.Random:
    return random.Random(f"wmviz-fuzz-{target}:{seed}:{index}")


@functools.cache
def _trace() -> Any:
    from wmviz.trace.readers import read_trace

    return read_trace(REPO / "sample_data" / f"{INCIDENT}.jsonl")


# ---- what-if tokens ---------------------------------------------------------------------------------


def _body(rng: random.Random) -> Any:
    """An edit body: plausible, then with fields of the wrong kind."""
    op = rng.choice(OPS)
    instance = "0" if rng.random() < 0.8 else rng.choice(["1", "", "x", 0])
    step = rng.choice([0, 1, 2, 3, 5]) if rng.random() < 0.8 else rng.choice([12, 10**9, -1, 2**63, "1", 1.0])
    body: dict[str, Any] = {"op": op, "instance": instance, "step": step}
    if op == "insert":
        body.update(
            {"kind": rng.choice(["record", "watermark", "status", "nope", 1]), "input": "0", "channel": 0}
        )
        body[rng.choice(["event_ms", "watermark_ms", "status", "key", "value"])] = rng.choice(FIELD_VALUES)
    elif op in ("change", "configure"):
        names = FIELD_NAMES[:9] if op == "change" else FIELD_NAMES[13:]
        body["fields"] = {rng.choice(names): _field_value(rng) for _ in range(rng.choice((1, 1, 2, 3)))}
    if rng.random() < 0.15:
        body[rng.choice(sorted(body))] = rng.choice(FIELD_VALUES)
    if rng.random() < 0.05:
        return rng.choice(
            [[body], 5, None, Raw("[" * 5000 + "]" * 5000), Raw('{"op":' * 3000 + "1" + "}" * 3000)]
        )
    return body


def _field_value(rng: random.Random) -> Any:
    if rng.random() < 0.5:
        return rng.choice(
            [0, 5, 1000, 1795514715000, "0", "k", "record", "watermark", "IDLE", "flink-master", None]
        )
    return rng.choice(FIELD_VALUES)


def token_of(rng: random.Random) -> tuple[str, str]:
    """(token, how it was made)."""
    roll = rng.random()
    if roll < 0.8:
        body = _body(rng)
        text = dump_json(body) if not isinstance(body, Raw) else body.text
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = text.encode("utf-8", errors="surrogatepass")
        if rng.random() < 0.1:
            data = mutate_bytes(rng, data)[0]
        token = base64.urlsafe_b64encode(data).decode("ascii")
        return (token.rstrip("=") if rng.random() < 0.95 else token), f"body {text[:80]}"
    junk = [
        "",
        "=",
        "a",
        "a" * 4097,
        "!!",
        "AAAA",
        "_-_-",
        "٣",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "e30",
    ]
    token = rng.choice(junk)
    return token, f"token {token[:40]!r}"


def make_whatif(seed: int, index: int) -> SurfaceCase:
    rng = _rng("whatif", seed, index)
    token, how = token_of(rng)
    return SurfaceCase(
        index, "whatif", (("token.txt", token.encode("utf-8", errors="surrogatepass")),), (), (how,)
    )


def run_whatif(case: SurfaceCase, folder: str) -> Outcome:
    """Decode, apply, describe and write the what-if; it must read back, and encode back."""
    from wmviz.analysis.whatif_edit import describe_edit
    from wmviz.analysis.whatif_token import decode_edit, encode_edit
    from wmviz.analysis.whatif_trace import apply_edit, whatif_file
    from wmviz.trace.errors import TraceValidationError
    from wmviz.trace.readers import read_trace

    token = case.files()["token.txt"].decode("utf-8", errors="surrogatepass")
    try:
        try:
            edit = decode_edit(token)
            if decode_edit(encode_edit(edit)) != edit:
                return ROUND_TRIP, f"{edit!r} encodes to a token of another edit"
            trace = _trace()
            edited = apply_edit(trace, edit)
            describe_edit(edit, trace)
        except (ValueError, TraceValidationError) as err:
            return CLEAN, first_line(err)
        name, data = whatif_file(edited)
        path = Path(folder, name)
        path.write_bytes(data)
        try:
            read_trace(path)
        except TraceValidationError as err:
            return UNREADABLE, f"the what-if file is refused: {first_line(err)}"
        finally:
            path.unlink()
        return ACCEPTED, ""
    except MemoryError:
        return MEMORY, "MemoryError"
    except Exception as err:
        return TRACEBACK, describe(err)


# ---- links ------------------------------------------------------------------------------------------

QUERY_KEYS = ("scenario", "trace", "profile", "engine", "step", "instance", "compare", "time", "tz")


def _query(rng: random.Random) -> dict[str, str]:
    query: dict[str, str] = {}
    for key in QUERY_KEYS:
        if rng.random() < 0.35:
            query[key] = _value(rng, key)
    return query


def _value(rng: random.Random, key: str) -> str:
    if key == "tz":
        return rng.choice(ZONES + TEXTS)
    if key == "compare" and rng.random() < 0.7:
        return (
            rng.choice(["whatif:", "trace:", ""]) + token_of(rng)[0] if rng.random() < 0.9 else "flink-master"
        )
    own = {"scenario": [INCIDENT, "nope"], "profile": ["flink-master", "flip-38477", "FLINK-1.X-2.X"],
           "engine": ["auto", "spark", "local", "SPARK"], "step": ["0", "5", "999999999999999", "1e3", "-3"],
           "time": ["utc", "relative", "ms", "UTC"], "trace": ["0" * 24, "abc"]}  # fmt: skip
    return rng.choice(own.get(key, []) + TEXTS)


def make_url(seed: int, index: int) -> SurfaceCase:
    rng = _rng("url", seed, index)
    query = _query(rng)
    data = json.dumps(query, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    return SurfaceCase(index, "url", (("query.json", data),), (), (f"query {list(query)}",))


def adopt(query: dict[str, str]) -> None:
    """What the page does with a link's (or a bundle view's) fields: parse them, show times in the
    zone they name, clamp the step, and build the what-if they compare with."""
    from wmviz.analysis.whatif_edit import describe_edit
    from wmviz.analysis.whatif_token import decode_edit
    from wmviz.analysis.whatif_trace import apply_edit
    from wmviz.view.timefmt import TimeFormat, trace_origin
    from wmviz.view.url import clamp_step, parse_view

    trace = _trace()
    view = parse_view(query, [INCIDENT], INCIDENT)
    times = TimeFormat(view.time, view.zone, origin_ms=trace_origin(trace))
    for row in trace.rows[:3]:
        times(row.event_ms if row.event_ms is not None else 0)
    clamp_step(view.step, len(trace.rows))
    if view.compare is not None and view.compare.startswith("whatif:"):
        edit = decode_edit(view.compare.removeprefix("whatif:"))
        describe_edit(edit, trace)
        apply_edit(trace, edit)


def run_url(case: SurfaceCase, folder: str) -> Outcome:
    from wmviz.trace.errors import TraceValidationError

    query = json.loads(case.files()["query.json"].decode("utf-8", errors="surrogatepass"))
    # ValueError and TraceValidationError: the page's notice for a what-if it cannot build.
    return judged(lambda: adopt(query), (ValueError, TraceValidationError))


# ---- bundles ----------------------------------------------------------------------------------------

_METHODS = (zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def _members(rng: random.Random) -> list[tuple[str, bytes]]:
    sample = REPO / "sample_data"
    trace_name = rng.choice(
        ["t.jsonl", "t.csv", "t.parquet", "config.json", "view.json", "a/../t.jsonl", "T.JSONL"]
    )
    members = [(trace_name, (sample / f"{INCIDENT}.jsonl").read_bytes())]
    if rng.random() < 0.5:
        members.append(("story.md", rng.choice([b"# story", b"x" * 300_000, b"\xff\xfe"])))
    if rng.random() < 0.3:
        members.append(("config.json", rng.choice([b"{}", b"[", b'{"channels": {"0": 2}}', b"\xff"])))
    view = {key: _value(rng, key) for key in QUERY_KEYS if rng.random() < 0.4}
    if rng.random() < 0.2:
        view[rng.choice(QUERY_KEYS)] = rng.choice(FIELD_VALUES)
    members.append(("view.json", dump_json(view).encode("utf-8", errors="surrogatepass")))
    if rng.random() < 0.1:
        members.append(("view.json", rng.choice([b"[]", b"{", b"[" * 100_000, b'"x"', b"x" * 70_000])))
    return members


def _zip(rng: random.Random, members: list[tuple[str, bytes]]) -> tuple[bytes, list[str]]:
    out = io.BytesIO()
    notes = []
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members:
            method = rng.choice(_METHODS) if rng.random() < 0.3 else zipfile.ZIP_DEFLATED
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=method)
        roll = rng.random()
        if roll < 0.03:  # inflates past the upload limit
            zf.writestr(
                "big.txt", b"\0" * rng.choice((201 << 20, 3 << 20)), compress_type=zipfile.ZIP_DEFLATED
            )
            notes.append("bomb")
        elif roll < 0.1:
            count = rng.choice((1000, 1000, 20_000))
            for i in range(count):
                zf.writestr(f"e{i}", b"")
            notes.append(f"{count} empty members")
        elif roll < 0.15:
            zf.writestr(zipfile.ZipInfo("dir/"), b"")
            zf.writestr("second.csv", b"a,b\n")
            notes.append("folder and a second trace")
    return out.getvalue(), notes


def make_bundle(seed: int, index: int) -> SurfaceCase:
    import warnings

    rng = _rng("bundle", seed, index)
    members = _members(rng)
    with warnings.catch_warnings():  # a member named twice is meant
        warnings.simplefilter("ignore")
        data, notes = _zip(rng, members)
    if rng.random() < 0.2:
        data, what = mutate_bytes(rng, data)
        notes.append(what)
    return SurfaceCase(
        index, "bundle", (("bundle.zip", data),), (), (f"members {[m[0] for m in members]}", *notes)
    )


def run_bundle(case: SurfaceCase, folder: str) -> Outcome:
    """Open the bundle, store what it holds, adopt its view (a bad field falls back with a note)."""
    from wmviz.store.bundles import open_bundle
    from wmviz.store.uploads import UploadError, store_upload
    from wmviz.trace.errors import TraceValidationError

    def run() -> None:
        bundle = open_bundle("bundle.zip", case.files()["bundle.zip"])
        store_upload(
            bundle.trace_name,
            bundle.trace_bytes,
            bundle.config_bytes,
            Path(folder, "uploads"),
            bundle.story_bytes,
        )
        adopt({key: value for key, value in bundle.view.items() if key not in ("trace", "scenario")})

    return judged(run, (UploadError, ValueError, TraceValidationError))
