"""Analyses over timelines and traces: comparing two runs (`compare`) and what-if edits (`whatif`)."""
