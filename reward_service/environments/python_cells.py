"""The ``python`` tool's state across calls: each call replays the session's earlier cells, silently.

Every sandbox execution is a fresh process, so a session keeps its *cells*, not a process: the
program a call runs first executes the session's earlier successful cells (the ones that exited
cleanly) in one namespace with their output suppressed, then runs the new cell with its output
shown, and, as a notebook does, prints the ``repr`` of a final expression that is not None.
``random`` is seeded with the session's seed first, so a replay draws what the first run drew.

Why replay rather than a long-lived interpreter per session: nothing is held between calls (no
process, no slot), so an idle or abandoned session costs memory for its source text only, a crashed
or killed sandbox loses no state, and every call runs under the sandbox's usual isolation and
limits. The cost: a call re-runs its predecessors (bounded by ``max_cells``; earlier cells count
against the program's time limit), and effects outside the process (time, files of an earlier run)
are those of the replay. A cell that failed (raised, timed out, was killed) is not kept.
"""

from __future__ import annotations

#: The wrapper program; ``{previous}``/``{current}``/``{seed}`` are Python literals (repr).
_PROGRAM = '''\
import ast as _ast, contextlib as _contextlib, io as _io, random as _random, sys as _sys, traceback as _traceback


def _run(_source, _echo, _namespace):
    _tree = _ast.parse(_source, "<cell>", "exec")
    _last = None
    if _echo and _tree.body and isinstance(_tree.body[-1], _ast.Expr):
        _last = _ast.Expression(_tree.body.pop().value)
    exec(compile(_tree, "<cell>", "exec"), _namespace)
    if _last is not None:
        _value = eval(compile(_last, "<cell>", "eval"), _namespace)
        if _value is not None:
            print(repr(_value))


def _main():
    _random.seed({seed})
    _namespace = {{"__name__": "__main__", "__builtins__": __builtins__}}
    with _contextlib.redirect_stdout(_io.StringIO()), _contextlib.redirect_stderr(_io.StringIO()):
        for _source in {previous}:
            try:
                _run(_source, False, _namespace)
            except BaseException:  # a replayed cell that fails now (it did not before) leaves the rest
                pass
    try:
        _run({current}, True, _namespace)
    except SystemExit:
        raise
    except BaseException:
        _type, _error, _tb = _sys.exc_info()
        while _tb is not None and _tb.tb_frame.f_code.co_filename != "<cell>":
            _tb = _tb.tb_next
        _traceback.print_exception(_type, _error, _tb)
        _sys.exit(1)


_main()
'''


def cell_program(previous: list[str], current: str, seed: int) -> str:
    """The program one ``python`` call runs: ``previous`` cells replayed silently, then ``current``."""
    return _PROGRAM.format(previous=repr(list(previous)), current=repr(current), seed=int(seed))
