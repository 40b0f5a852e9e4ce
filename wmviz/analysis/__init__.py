"""Analyses over timelines and traces: comparing two runs (`compare`) and what-if edits (the edits
and their wording `whatif_edit`, the edited trace `whatif_trace`, link tokens `whatif_token`)."""
