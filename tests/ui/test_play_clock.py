"""Autoplay's clock (`wmviz.ui.controls.due_steps`): the step follows the time played, not the
number of timer ticks, so a slow redraw is made up by the next move (issue 30, Play speed)."""

from __future__ import annotations

from wmviz.ui.controls import CATCH_UP_S, due_steps


def test_the_first_tick_starts_the_clock_and_moves_nothing():
    assert due_steps(100.0, None, 0.5) == (0, 100.5)


def test_nothing_moves_before_the_step_is_due():
    assert due_steps(100.2, 100.5, 0.5) == (0, 100.5)


def test_a_tick_on_time_moves_one_step_and_keeps_the_beat():
    assert due_steps(100.5, 100.5, 0.5) == (1, 101.0)
    moves, due = due_steps(100.6, 100.5, 0.5)  # a tick late keeps the beat, not the tick's time
    assert moves == 1 and abs(due - 101.0) < 1e-9


def test_a_slow_redraw_is_made_up_by_the_next_move():
    moves, due = due_steps(101.8, 100.5, 0.5)  # 1.3 s past due at 2 steps/s: 100.5, 101.0, 101.5
    assert moves == 3 and abs(due - 102.0) < 1e-9


def test_time_lost_past_the_catch_up_bound_is_forgotten():
    moves, due = due_steps(100.5 + 60, 100.5, 0.5)  # a hidden tab for a minute
    assert moves == 1 + int(CATCH_UP_S / 0.5)
    assert due > 100.5 + 60
