"""The `ncu-classify` command: typer commands, one module per step; nothing imports this package.
`main` is the console entry point (`ncu-classify = "ncu_classify.cli:main"`); `run(argv)` runs
one command line and returns its exit code (tests call it).

  start       the console entry point, signal handlers in place before the commands load
  entry       every command registered; one command line run; every way out an exit code
  app         the typer app, library errors -> exit codes and one line, the checked -o
  capture     `capture` (the work is in capture/)
  classify    `classify` and `reclassify` (the work is in verdicts/)
  present     `summary`, `next`, `report`, `schema` and `metrics`
  compare     `diff` (the work is in compare/)
  project     `project` (the work is in cards/projection)
  record      `record` (the work is in record/)
  tries       `try` (the work is in tries/)
  options     command-line values typer cannot check (exit 2)
  outputs     where a command writes, checked first, written without destroying
  terminal    what people see: tables, progress bars, escaped text
  streams     standard output and error whose reader may leave (`| head`)
  interrupts  signal handling scoped to the work that needs it
  __main__    `python -m ncu_classify.cli`
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = ["main", "run"]
__getattr__ = lazy_face(__name__, {"main": "start", "run": "entry"})
