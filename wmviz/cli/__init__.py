"""`python -m wmviz` and the `wmviz` script: the parser and commands (`commands`), the import and
record subcommands (`record`), and the one error every command raises for bad input (`errors`)."""

from wmviz.cli.commands import main

__all__ = ["main"]
