"""Keyframes: an instance's whole simulation state after a step, as plain, versioned JSON.

A keyframe lets the UI rebuild any step from the nearest one plus a short replay. It is written by
one run and may be read by another process, another version of wmviz, or someone else's machine,
so it is data, never code: plain JSON values, where an object is only ever an instance of a class
of `wmviz.core` (by name, from a fixed list) or one of its enums, rebuilt by setting its
attributes. Nothing in a keyframe can name another class or run a constructor, unlike a pickle.

The encoding (format `wmviz-keyframe/4`; 4: session windows as a sorted set, the alignment ring
as runs):

* JSON null, booleans, numbers and strings stand for themselves; a list for a Python list;
* `{"t": [...]}` a tuple, `{"s": [...]}` a set, `{"fs": [...]}` a frozenset, `{"d": [[k, v], ...]}`
  a dict (keys may be tuples or objects);
* `{"e": "types.Status", "v": "IDLE"}` an enum member (a core class is named by its module in
  `wmviz.core` and its own name); `{"ref": "config"}` an object the reader supplies
  (the run's config and profile live once in meta.json, not in every keyframe);
* `{"c": "valve.Valve", "n": 3, "a": {...}}` an object of a `wmviz.core` class, its attributes by name,
  and `{"o": 3}` the same object again (the pipeline and its operator share one timer service);
* `{"c": "timers.TimerHeap", "n": 4, "st": ...}` an object of a class that says what its state is
  (`__getstate__`, rebuilt by its `__setstate__`, as for pickling);
* `{"p": "..."}` a payload value JSON cannot hold (a Parquet timestamp, decimal or bytes), in the
  trace payload's own encoding (`wmviz.trace.payload`).

Scratch buffers that the next step resets (`InstancePipeline.step_log` and friends) are not stored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import importlib
import inspect
import json
import pkgutil
from collections.abc import Mapping
from typing import Any

import wmviz.core
from wmviz.core.errors import BadInputError
from wmviz.trace.payload import decode_payload, encode_payload

FORMAT = "wmviz-keyframe/4"
MAX_DEPTH = 64
_TRANSIENT = {"pipeline.InstancePipeline": {"step_log", "step_valve", "step_out", "step_probes", "_explain"}}
_PAYLOAD_TYPES = (dt.date, dt.time, dt.timedelta, decimal.Decimal, bytes)


def _reset_pipeline(obj: Any) -> None:
    """The scratch buffers `InstancePipeline.run_row` refills every step."""
    from wmviz.core.operator_log import StepLog

    obj.__dict__.update(_explain=False, step_log=StepLog(), step_valve=[], step_out=[], step_probes=[])


_RESETS = {"pipeline.InstancePipeline": _reset_pipeline}


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    # Subpackages too (wmviz.core.java); a class is named by its module's last name only, so a
    # keyframe's bytes do not depend on which folder of the core a module sits in.
    for info in pkgutil.walk_packages(wmviz.core.__path__, "wmviz.core."):
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                key = f"{info.name.rsplit('.', 1)[-1]}.{name}"
                assert key not in found, f"two core classes would share the keyframe name {key}"
                found[key] = cls
    return found


def _name(cls: type) -> str:
    """A core class's name in a keyframe: its module within wmviz.core, then the class."""
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__qualname__}"


CLASSES = _classes()
"""Every class (and enum) `wmviz.core` defines, by name: the only objects a keyframe can hold."""


class KeyframeError(BadInputError, ValueError):
    """A keyframe that is not one wmviz wrote (unknown class, wrong format, too deep)."""


def encode(state: Any, refs: Mapping[str, Any] | None = None) -> bytes:
    """`state` (usually an InstancePipeline) as keyframe bytes; objects in `refs` are stored by name."""
    by_id = {id(obj): name for name, obj in (refs or {}).items()}
    return json.dumps([FORMAT, _Encoder(by_id).encode(state, 0)], separators=(",", ":")).encode()


def decode(blob: bytes, refs: Mapping[str, Any] | None = None) -> Any:
    """The state back from `encode`'s bytes, with `refs` supplying the objects stored by name."""
    try:
        fmt, body = json.loads(blob)
    except (ValueError, TypeError, RecursionError) as exc:
        raise KeyframeError(f"not a keyframe: {exc}") from None
    if fmt != FORMAT:
        raise KeyframeError(f"keyframe format {fmt!r}; this wmviz reads {FORMAT}")
    return _Decoder(refs or {}).decode(body, 0)


_SCALARS = frozenset({type(None), bool, int, float, str})
"""Types that stand for themselves (exact types: an int enum or str subclass is not one of them)."""


class _Encoder:
    def __init__(self, refs: dict[int, str]) -> None:
        self.refs = refs
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # holds encoded objects alive, so their ids stay unique

    def encode(self, value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise KeyframeError("state nested too deep to store")
        if value is None or isinstance(value, bool | int | float | str):
            return value
        name = self.refs.get(id(value))
        if name is not None:
            return {"ref": name}
        depth += 1
        if type(value) in _SHAPES:  # a core class met before: skip the container checks
            return self.core_object(value, depth)
        return self.container(value, depth)

    def container(self, value: Any, depth: int) -> Any:
        """A built-in container or a payload value; anything else must be a core object."""
        if isinstance(value, list):
            return self.items(value, depth)
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return {"t": self.items(value, depth)}
        if isinstance(value, frozenset):
            return {"fs": self.items(value, depth)}
        if isinstance(value, set):
            return {"s": self.items(value, depth)}
        if isinstance(value, dict):
            return {"d": [[self.encode(k, depth), self.encode(v, depth)] for k, v in value.items()]}
        if isinstance(value, _PAYLOAD_TYPES):
            return {"p": encode_payload([("v", value)])}
        return self.core_object(value, depth)

    def core_object(self, value: Any, depth: int) -> Any:
        """An object of a `wmviz.core` class (or one of its enums)."""
        cls = type(value)
        shape = _SHAPES.get(cls)
        if shape is None:
            shape = _SHAPES[cls] = _shape(cls)
        name, kind, fields = shape
        if kind == "enum":
            return {"e": name, "v": value.name}
        number = self.seen.get(id(value))
        if number is not None:
            return {"o": number}
        number = self.seen[id(value)] = len(self.seen)
        self.keep.append(value)
        if kind == "fields":  # a slotted dataclass's own __getstate__: the list of its fields' values
            if depth > MAX_DEPTH:
                raise KeyframeError("state nested too deep to store")
            state = self.items([getattr(value, f) for f in fields], depth + 1)
            return {"c": name, "n": number, "st": state}
        if kind == "state":  # the class says what its state is (identities it rebuilds, say)
            return {"c": name, "n": number, "st": self.encode(value.__getstate__(), depth)}
        skip = _TRANSIENT.get(name, ())
        attributes = {k: self.encode(v, depth) for k, v in _attributes(value).items() if k not in skip}
        return {"c": name, "n": number, "a": attributes}

    def items(self, values: Any, depth: int) -> list[Any]:
        """A container's items; a scalar item is itself without a call (most items in a state are)."""
        if depth > MAX_DEPTH and values:
            raise KeyframeError("state nested too deep to store")
        scalars, encode = _SCALARS, self.encode
        return [v if type(v) in scalars else encode(v, depth) for v in values]


def _shape(cls: type) -> tuple[str, str, tuple[str, ...]]:
    """How objects of a class are stored: (name, "enum" | "fields" | "state" | "attributes", the
    fields read for "fields"); refuses a class that is not `wmviz.core`'s."""
    name = _name(cls)
    if CLASSES.get(name) is not cls:
        raise KeyframeError(f"cannot store a {cls.__module__}.{cls.__qualname__} in a keyframe")
    if issubclass(cls, enum.Enum):
        return name, "enum", ()
    if _own_state(cls):
        getstate = getattr(cls, "__getstate__", None)
        if dataclasses.is_dataclass(cls) and getattr(getstate, "__module__", None) == "dataclasses":
            # The state dataclasses gives a slotted class is its fields' values in order: read
            # them directly (its __getstate__ looks the fields up again for every object).
            return name, "fields", tuple(f.name for f in dataclasses.fields(cls))
        return name, "state", ()
    return name, "attributes", ()


_SHAPES: dict[type, tuple[str, str, tuple[str, ...]]] = {}


def _own_state(cls: type) -> bool:
    """Whether a core class defines its own `__getstate__`/`__setstate__` (as for pickling)."""
    return any("__setstate__" in vars(c) for c in cls.__mro__ if c is not object)


def _attributes(obj: Any) -> dict[str, Any]:
    """An object's state by attribute name: a dataclass's fields, else its `__slots__` (along its
    classes) and its `__dict__`."""
    cls = type(obj)
    names = _ATTRIBUTE_NAMES.get(cls)
    if names is None:
        names = _ATTRIBUTE_NAMES[cls] = _attribute_names(cls)
    if dataclasses.is_dataclass(cls):
        return {n: getattr(obj, n) for n in names}
    found = {n: getattr(obj, n) for n in names if hasattr(obj, n)}
    found.update(getattr(obj, "__dict__", {}))
    return found


def _attribute_names(cls: type) -> tuple[str, ...]:
    """The attribute names `_attributes` reads on every object of a class, in order: a dataclass's
    fields, else the names in `__slots__` along its classes (a mypyc class's `__mypyc_attrs__`)."""
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    names: list[str] = list(getattr(cls, "__mypyc_attrs__", ()))
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))


_ATTRIBUTE_NAMES: dict[type, tuple[str, ...]] = {}


class _Decoder:
    def __init__(self, refs: Mapping[str, Any]) -> None:
        self.refs = refs
        self.objects: dict[int, Any] = {}

    def decode(self, value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise KeyframeError("keyframe nested too deep")
        if value is None or isinstance(value, bool | int | float | str):
            return value
        depth += 1
        if isinstance(value, list):
            return [self.decode(v, depth) for v in value]
        if not isinstance(value, dict) or not 1 <= len(value) <= 3:
            raise KeyframeError("keyframe holds a value of an unknown shape")
        if "ref" in value or "o" in value:
            return self._reference(value)
        return self._tagged(value, depth)

    def _reference(self, value: dict[str, Any]) -> Any:
        """What `{"ref": name}` (supplied by the reader) or `{"o": n}` (an object met before) names."""
        if "ref" in value:
            if value["ref"] not in self.refs:
                raise KeyframeError(f"keyframe refers to {value['ref']!r}, which the reader did not supply")
            return self.refs[value["ref"]]
        if value["o"] not in self.objects:
            raise KeyframeError("keyframe refers to an object before defining it")
        return self.objects[value["o"]]

    def _tagged(self, value: dict[str, Any], depth: int) -> Any:
        """A container, a payload value or an object, by its tag."""
        for tag, build in (("t", tuple), ("s", set), ("fs", frozenset)):
            if tag in value and len(value) == 1:
                return build(self.decode(v, depth) for v in value[tag])
        if "d" in value:
            return {self.decode(k, depth): self.decode(v, depth) for k, v in value["d"]}
        if "p" in value:
            try:
                return decode_payload(value["p"])[0][1]
            except (ValueError, TypeError, IndexError) as exc:
                raise KeyframeError(f"keyframe holds a bad payload value: {exc}") from None
        return self._object(value, depth)

    def _object(self, value: dict[str, Any], depth: int) -> Any:
        name = value.get("e") or value.get("c") or ""
        cls = CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            raise KeyframeError(f"keyframe names an unknown class {name!r}")
        if "e" in value:
            if not issubclass(cls, enum.Enum) or value.get("v") not in cls.__members__:
                raise KeyframeError(f"keyframe holds an unknown {cls.__name__} {value.get('v')!r}")
            return cls[value["v"]]
        if issubclass(cls, enum.Enum | BaseException):
            raise KeyframeError(f"keyframe holds a malformed {cls.__name__}")
        obj: Any = cls.__new__(cls)
        self.objects[value.get("n")] = obj  # type: ignore[index]
        if "st" in value and _own_state(cls):
            # _own_state checked that the class defines __setstate__ (the timer heap does).
            obj.__setstate__(self.decode(value["st"], depth))
            return obj
        if not isinstance(value.get("a"), dict):
            raise KeyframeError(f"keyframe holds a malformed {cls.__name__}")
        for key, attribute in value["a"].items():
            object.__setattr__(obj, key, self.decode(attribute, depth))
        reset = _RESETS.get(name)
        if reset is not None:
            reset(obj)
        return obj
