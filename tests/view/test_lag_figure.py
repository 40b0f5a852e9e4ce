"""The freshness budget's bars (`wmviz.view.lag_figure`): one bar trace per cause that appears, in
the causes' order, the moment marked, a negative remainder drawn below the axis, and the
recording's names escaped for Plotly (`figures_common.plotly_text`)."""

from __future__ import annotations

from wmviz.view.lag_figure import budget_headline, budget_rows, lag_figure, lag_rows
from wmviz.view.timefmt import TimeFormat

T0 = 1_795_633_200_000
HOSTILE = "<a href='x'>src</a> %{y}"


def budget(at: int, parts: list[tuple[str, int, str]]) -> dict:
    return {
        "at_ms": at,
        "vertex": HOSTILE,
        "subtask": 0,
        "reference": "wall clock",
        "reference_ms": at,
        "watermark_ms": at - sum(ms for _, ms, _ in parts),
        "total_ms": sum(ms for _, ms, _ in parts),
        "parts": [
            {"cause": c, "ms": ms, "kind": k, "where": f"{HOSTILE} subtask 0", "why": "because"}
            for c, ms, k in parts
        ],
    }


BUDGETS = [
    budget(T0, [("backlog", 2000, "measured"), ("out-of-orderness", 5001, "derived")]),
    budget(
        T0 + 1000,
        [("stall", 9000, "measured"), ("out-of-orderness", 5001, "derived"), ("unexplained", -1, "measured")],
    ),
]


def test_a_bar_trace_per_cause_in_the_causes_order_stacking_to_each_total():
    figure = lag_figure(BUDGETS, TimeFormat(), cursor_ms=T0 + 1000)
    assert [d["name"] for d in figure["data"]] == ["out-of-orderness", "backlog", "stall", "unexplained"]
    assert figure["layout"]["barmode"] == "relative"  # a negative part is drawn below the axis
    for i, b in enumerate(BUDGETS):
        assert sum(d["y"][i] for d in figure["data"]) == b["total_ms"]
    assert figure["layout"]["shapes"][0]["x0"] == T0 + 1000
    assert lag_rows(BUDGETS)[1] == {
        "at_ms": T0 + 1000,
        "total_ms": 14_000,
        "stall": 9000,
        "out-of-orderness": 5001,
        "unexplained": -1,
    }


def test_names_from_the_recording_are_escaped_for_plotly():
    figure = lag_figure(BUDGETS)
    text = " ".join(h for d in figure["data"] for h in d["hovertext"])
    assert "<a href" not in text and "%{y}" not in text
    assert "&lt;a href='x'&gt;src&lt;/a&gt; &#37;{y} subtask 0" in text


def test_the_table_lists_the_largest_part_first_and_the_headline_reads():
    rows = budget_rows(BUDGETS[1])
    assert [r["cause"] for r in rows] == ["stall", "out-of-orderness", "unexplained"]
    assert rows[0]["behind"] == "9s" and rows[0]["share"] == "64.3%" and rows[2]["behind"] == "-1ms"
    assert budget_headline(BUDGETS[0], TimeFormat()) == (
        f"{HOSTILE} subtask 0 is 7.001s behind the wall clock at 2026-11-25 19:00:00.000Z; "
        "its watermark is 2026-11-25 18:59:52.999Z"
    )
