"""`wmviz import kafka`: a topic's partition/offset/timestamp dump as a per-split generator trace.

What a dump says, and what it cannot. Each line is one record: its partition, its offset and its
Kafka timestamp (kcat `-f '%p %o %T\\n'`; `%t %p %o %T` with the topic first; or the console
consumer's `CreateTime:<ms>  Partition:<p>  Offset:<o>  ...` with `print.timestamp`,
`print.partition` and `print.offset`). An optional last field is the record's *event time*, when
the job's timestamp assigner reads it from the value rather than using the Kafka timestamp
(KafkaSource's default). A dump does not say when the job read each record, so the trace assumes
a job keeping up with the topic: a record arrives when it was appended, which is its Kafka
timestamp for a LogAppendTime topic (and, for CreateTime, when producers stamp on time), and never
before an earlier offset of its partition.

The source is modelled as Flink's KafkaSource runs it: one split per partition (split id
`<topic>-<partition>`, as KafkaPartitionSplit names it), each partition owned by the source
subtask KafkaSourceEnumerator assigns it to, each split with its own bounded-out-of-orderness
generator and idleness (wmviz/core/splits.py), the subtask's watermark the combination of its
splits; the subtasks are the channels of the operator downstream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmviz.core.budgets import import_rows_reason
from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_CHANNELS, MAX_IMPORT_ROWS, MAX_SPLITS
from wmviz.core.types import MAX_MS
from wmviz.trace.config import channel_budget_reason, split_budget_reason
from wmviz.trace.quote import show
from wmviz.trace.timecells import ascii_int, parse_time_ms

# ASCII digits only, as everywhere a number is read: `Partition:٣` is no partition.
_CONSOLE = re.compile(
    r"(CreateTime|LogAppendTime|NO_TIMESTAMP):(-?[0-9]+)|Partition:([0-9]+)|Offset:([0-9]+)"
)


class KafkaDumpError(BadInputError, ValueError):
    """A dump line that cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One record of the dump."""

    line: int
    topic: str | None
    partition: int
    offset: int
    timestamp_ms: int
    event_ms: int | None = None


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: 31·h + c over the UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def split_owner(topic: str, partition: int, readers: int) -> int:
    """The source subtask KafkaSourceEnumerator assigns a partition to.

    Restated from flink-connector-kafka's `getSplitOwner`: the topic's start index is
    `((topic.hashCode() * 31) & 0x7FFFFFFF) % readers` (Java int arithmetic), and partition p goes
    to `(start + p) % readers`: round-robin from the start index.
    """
    start = ((java_string_hash(topic) * 31) & 0x7FFFFFFF) % readers
    return (start + partition) % readers


def split_id(topic: str, partition: int) -> str:
    """KafkaPartitionSplit's id: `<topic>-<partition>`."""
    return f"{topic}-{partition}"


def parse_line(text: str, line: int, name: str) -> KafkaRecord | None:
    """One dump line; None for a blank line or a kcat `%` message."""
    text = text.strip()
    if not text or text.startswith("%"):
        return None
    where = f"{name}:{line}"
    if _CONSOLE.search(text):
        return _console_line(text, line, where)
    fields = text.split()
    topic = None
    if fields and not _is_integer(fields[0]):
        topic, fields = fields[0], fields[1:]
    if len(fields) not in (3, 4):
        raise KafkaDumpError(
            f"{where}: expected `partition offset timestamp [event_time]` (kcat -f '%p %o %T\\n'), "
            f"got {len(fields)} fields"
        )
    partition, offset = _integer(fields[0], where, text), _integer(fields[1], where, text)
    timestamp = _time(fields[2], where, "timestamp")
    event = _time(fields[3], where, "event time") if len(fields) == 4 else None
    return _record(line, topic, partition, offset, timestamp, event, where)


def _console_line(text: str, line: int, where: str) -> KafkaRecord:
    found: dict[str, str] = {}
    for match in _CONSOLE.finditer(text):
        if match.group(1):
            found.setdefault("timestamp", match.group(2))
        elif match.group(3):
            found.setdefault("partition", match.group(3))
        elif match.group(4):
            found.setdefault("offset", match.group(4))
    missing = [k for k in ("timestamp", "partition", "offset") if k not in found]
    if missing:
        raise KafkaDumpError(
            f"{where}: console-consumer line without {', '.join(missing)} (print.timestamp, "
            "print.partition and print.offset must be on)"
        )
    partition, offset = _integer(found["partition"], where, text), _integer(found["offset"], where, text)
    return _record(line, None, partition, offset, _time(found["timestamp"], where, "timestamp"), None, where)


def _is_integer(text: str) -> bool:
    try:
        ascii_int(text)
    except ValueError:
        return False
    return True


def _integer(text: str, where: str, line: str) -> int:
    """A partition or an offset: an integer in ASCII digits within a long (Kafka's offsets are)."""
    try:
        return ascii_int(text)
    except ValueError:
        raise KafkaDumpError(
            f"{where}: partition and offset must be integers (ASCII digits, within a long): {line[:80]!r}"
        ) from None


def _time(text: str, where: str, what: str) -> int:
    try:
        return parse_time_ms(text, sentinels=False)
    except ValueError as err:
        raise KafkaDumpError(f"{where}: {what} {text!r}: {err}") from None


def _record(
    line: int, topic: str | None, partition: int, offset: int, ts: int, event: int | None, where: str
) -> KafkaRecord:
    if partition < 0 or offset < 0:
        raise KafkaDumpError(f"{where}: partition and offset must not be negative")
    if partition >= MAX_SPLITS.get():
        raise KafkaDumpError(
            f"{where}: partition {partition:,}: {split_budget_reason(partition + 1, 'partitions')}"
        )
    if ts < 0:
        raise KafkaDumpError(f"{where}: the record has no timestamp ({ts}); a watermark needs one")
    return KafkaRecord(line, topic, partition, offset, ts, event)


def read_dump(path: Path) -> list[KafkaRecord]:
    """Every record of a dump file, in file order."""
    records: list[KafkaRecord] = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                record = parse_line(text, number, path.name)
                if record is None:
                    continue
                if len(records) >= MAX_IMPORT_ROWS.get():
                    raise KafkaDumpError(import_rows_reason(path.name))
                records.append(record)
    except UnicodeDecodeError:
        raise KafkaDumpError(f"{path.name}: not UTF-8 text") from None
    if not records:
        raise KafkaDumpError(f"{path.name}: no records")
    return records


@dataclass(frozen=True)
class KafkaImport:
    """The options of one import."""

    parallelism: int
    out_of_orderness_ms: int
    idleness_ms: int | None = None
    topic: str | None = None
    partitions: int | None = None
    interval_ms: int = 200


_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
"""What Kafka allows a topic to be called (its Topic.validate)."""


def topic_of(records: list[KafkaRecord], options: KafkaImport, name: str) -> str:
    """The topic: --topic, or the dump's own (one topic per import), named as Kafka allows."""
    topics = {r.topic for r in records if r.topic is not None}
    if options.topic is not None:
        return _legal_topic(options.topic, "--topic")
    if len(topics) == 1:
        return _legal_topic(topics.pop(), name)
    if topics:
        raise KafkaDumpError(f"{name}: several topics {sorted(topics)}; import one with --topic")
    raise KafkaDumpError(
        f"{name}: the dump does not name its topic; pass --topic (the partition assignment depends on it)"
    )


def check_budgets(options: KafkaImport) -> None:
    """The options within what a real job has, before anything is built for them."""
    if options.parallelism > MAX_CHANNELS.get():
        raise KafkaDumpError(
            f"--parallelism {options.parallelism:,}: {channel_budget_reason(options.parallelism)}"
        )
    if options.partitions is not None and options.partitions > MAX_SPLITS.get():
        raise KafkaDumpError(
            f"--partitions {options.partitions:,}: {split_budget_reason(options.partitions, 'partitions')}"
        )


def _legal_topic(topic: str, where: str) -> str:
    if not _TOPIC.fullmatch(topic):
        raise KafkaDumpError(
            f"{where}: {show(topic)} is not a Kafka topic name (up to 249 of ASCII letters, digits, "
            "'.', '_' and '-')"
        )
    return topic


def build_trace(records: list[KafkaRecord], options: KafkaImport, name: str) -> tuple[dict, list[dict]]:
    """The config and rows of the generator-mode trace."""
    check_budgets(options)
    topic = topic_of(records, options, name)
    records = [r for r in records if r.topic in (None, topic)]
    if not records:
        raise KafkaDumpError(f"{name}: no records of topic {topic!r}")
    seen = max(r.partition for r in records) + 1
    partitions = options.partitions if options.partitions is not None else seen
    if partitions < seen:
        raise KafkaDumpError(f"{name}: --partitions {partitions}, but the dump has partition {seen - 1}")
    owners = {p: split_owner(topic, p, options.parallelism) for p in range(partitions)}
    splits: dict[str, list[str]] = {str(s): [] for s in range(options.parallelism)}
    for p in range(partitions):
        splits[str(owners[p])].append(split_id(topic, p))
    # A subtask without partitions reads no split (its main output alone, as in Flink).
    splits = {s: ids for s, ids in splits.items() if ids}
    generator: dict[str, Any] = {
        "out_of_orderness_ms": options.out_of_orderness_ms,
        "emit": "periodic",
        "interval_ms": options.interval_ms,
        "resume": "flip27-released",
        "splits": splits,
    }
    if options.idleness_ms is not None:
        generator["idle_timeout_ms"] = options.idleness_ms
    assignment = "; ".join(
        f"subtask {s}: partitions {', '.join(i.rsplit('-', 1)[1] for i in ids)}" for s, ids in splits.items()
    )
    config = {
        "name": f"Kafka topic {topic}: {partitions} partitions over {options.parallelism} source subtasks",
        "description": (
            f"Imported from {name}. Each partition is a split with its own generator "
            f"(bounded out-of-orderness {options.out_of_orderness_ms} ms"
            + (f", idleness {options.idleness_ms} ms" if options.idleness_ms is not None else "")
            + f"), assigned as KafkaSourceEnumerator does ({assignment}). A record arrives at its Kafka "
            "timestamp (a job keeping up with the topic)."
        ),
        "channels": {"0": options.parallelism},
        "generator": generator,
    }
    rows = list(_rows(records, topic, owners))
    tail = _tail_row(rows, options)
    if tail is not None:
        rows.append(tail)
    return config, rows


def _rows(records: list[KafkaRecord], topic: str, owners: dict[int, int]) -> Iterator[dict]:
    """Records in arrival order: by arrival time, then partition and offset."""
    by_partition: dict[int, list[KafkaRecord]] = {}
    for record in records:
        by_partition.setdefault(record.partition, []).append(record)
    timed = []
    for partition, items in by_partition.items():
        arrival = None
        for record in sorted(items, key=lambda r: r.offset):
            # Appended after every earlier offset of its partition, so never read before them.
            arrival = record.timestamp_ms if arrival is None else max(arrival, record.timestamp_ms)
            timed.append((arrival, partition, record.offset, record))
    timed.sort(key=lambda item: item[:3])
    for seq, (arrival, partition, offset, record) in enumerate(timed, start=1):
        yield {
            "seq": seq,
            "instance": "0",
            "channel": owners[partition],
            "kind": "record",
            "event_ms": record.event_ms if record.event_ms is not None else record.timestamp_ms,
            "proc_ms": arrival,
            "value": f"p{partition}/{offset}",
            "split": split_id(topic, partition),
            "partition": partition,
            "offset": offset,
            "dump_line": record.line,
        }


def _tail_row(rows: list[dict], options: KafkaImport) -> dict | None:
    """After the last record the clock runs on long enough for idleness to show."""
    if options.idleness_ms is None or not rows:
        return None
    last = rows[-1]
    proc_ms = last["proc_ms"] + options.idleness_ms + 3 * options.interval_ms
    if proc_ms > MAX_MS:
        raise KafkaDumpError(
            f"the last record arrives at {last['proc_ms']}, too late for the idleness to show before "
            "Long.MAX_VALUE: its timestamp is no epoch-ms time"
        )
    return {"seq": last["seq"] + 1, "instance": "0", "kind": "proctime", "proc_ms": proc_ms}
