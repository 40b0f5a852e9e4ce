"""The exported report: one self-contained HTML file built from the pure views (`build`), its
escaped HTML pieces (`html`) and the key steps it walks through (`steps`)."""

from wmviz.report.build import CompareInput, ReportInput, build_report, chart_images
from wmviz.report.steps import compact_input, key_steps, step_reasons

__all__ = [
    "CompareInput",
    "ReportInput",
    "build_report",
    "chart_images",
    "compact_input",
    "key_steps",
    "step_reasons",
]
