"""A Flink SQL job: its plan read from any of its spellings, its watermarks replayed by SQL's rules.

Floor 5, beside `analysis` (docs/architecture.md): it reads traces, timelines and recordings and
runs the core model; nothing below it knows SQL.
"""
