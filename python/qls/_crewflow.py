"""The crews and agents a CrewAI ``Flow`` method kicks off, found in its source.

A Flow method is code, but CrewAI's own templates and documentation run crews from it in a few
fixed shapes, which are read here from the method's syntax tree (the code is never run):

- ``SomeCrew().crew().kickoff(...)`` on a ``@CrewBase`` class named in the method's globals or
  closure: the class is instantiated (its constructor reads the crew's YAML configuration) and
  its ``crew()`` is the crew;
- ``name.kickoff(...)`` where ``name`` is a ``Crew`` or an ``Agent`` in the method's globals or
  closure (a crew defined at module level);
- ``self.attr.kickoff(...)`` where ``attr`` is a ``Crew`` or ``Agent`` on the flow object and no
  method of the flow assigns ``self.attr`` (else what runs is the method's, not the one read now).

``kickoff``, ``kickoff_async``, ``akickoff`` and the ``kickoff_for_each`` family count. Anything
else that is kicked off — a crew or agent built inside the method, one returned by a function, a
nested flow, a name the method assigns itself, a method whose source cannot be read — cannot be
followed without running the code: it is returned as a note and stays
inside the method's custom node (QG006), as every flow method's own code does.

A kickoff inside a loop (``for``, ``while``, a comprehension) or of the ``for_each`` family may
run any number of times: the caller drops the budgets of the agents it reaches.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

__all__ = ["Kickoff", "kickoffs"]

_KICKOFF = {"kickoff", "kickoff_async", "akickoff", "kickoff_for_each", "kickoff_for_each_async",
            "akickoff_for_each"}
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass
class Kickoff:
    """One crew or agent a flow method runs, in the order its kickoff is written."""

    target: Any  # a ``crewai.Crew`` or ``crewai.Agent``
    line: int  # the kickoff's line in the method's file
    repeats: bool  # in a loop, or the ``for_each`` family


def _scope(fn: Any) -> dict[str, Any]:
    """The names a function reads from outside: its globals, then its closure."""
    out = dict(getattr(fn, "__globals__", {}) or {})
    try:
        out.update(inspect.getclosurevars(fn).nonlocals)
    except (TypeError, ValueError):
        pass
    return out


def _instantiate_crew_class(cls: Any) -> Any:
    """``cls().crew()`` for a ``@CrewBase`` class; raises what its constructor raises."""
    return cls().crew()


def _assigned_self_attrs(cls: type) -> set[str]:
    """The ``self.<attr>`` a flow's methods other than ``__init__`` assign (``__init__``'s are
    already on the object the exporter reads)."""
    out: set[str] = set()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return out
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != "__init__":
            for n in ast.walk(fn):
                if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                        and isinstance(n.value, ast.Name) and n.value.id == "self"):
                    out.add(n.attr)
    return out


def _locals(fn: ast.AST) -> set[str]:
    """The names a function binds itself (its parameters and every name it assigns)."""
    out = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    out |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def kickoffs(flow: Any, method: str) -> tuple[list[Kickoff], list[str]]:
    """The crews and agents ``method`` of ``flow`` kicks off, and notes on what it could not
    follow."""
    from crewai import Agent, Crew

    cls = type(flow)
    where = f"flow method `{cls.__name__}.{method}`"
    fn = inspect.unwrap(getattr(cls, method))  # crewai's FlowMethod sets `__wrapped__`
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError) as e:
        return [], [f"{where}: its source could not be read ({type(e).__name__}), so what it kicks off "
                    f"is not followed; it stays the method's opaque code (QG006)"]
    scope = _scope(fn)
    bound_here = _locals(tree)
    reassigned = _assigned_self_attrs(cls)
    found: list[Kickoff] = []
    notes: list[str] = []
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def in_loop(node: ast.AST) -> bool:
        p = parents.get(node)
        while p is not None and not isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(p, _LOOPS):
                return True
            p = parents.get(p)
        return False

    def resolve(recv: ast.expr) -> tuple[Any, str | None]:
        """The object a kickoff's receiver names, or why it cannot be followed."""
        if isinstance(recv, ast.Name):
            if recv.id in bound_here or recv.id not in scope:
                return None, f"`{recv.id}` is built inside the method"
            return scope[recv.id], None
        if isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and recv.value.id == "self":
            if recv.attr in reassigned:
                return None, f"`self.{recv.attr}` is assigned by a method of the flow"
            try:
                return getattr(flow, recv.attr), None
            except Exception as e:  # a property that fails without a run
                return None, f"`self.{recv.attr}` could not be read ({e})"
        if (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr == "crew"
                and not recv.args and not recv.keywords and isinstance(recv.func.value, ast.Call)
                and isinstance(recv.func.value.func, ast.Name) and not recv.func.value.args
                and not recv.func.value.keywords):
            name = recv.func.value.func.id
            c = scope.get(name)
            if c is None:
                return None, f"`{name}` is not a name the method's module or closure holds"
            if not getattr(c, "is_crew_class", False):
                return None, f"`{name}` is no @CrewBase class"
            try:
                return _instantiate_crew_class(c), None
            except Exception as e:
                return None, f"`{name}().crew()` failed when built ({type(e).__name__}: {e})"
        return None, f"`{ast.unparse(recv)}` is an expression the exporter does not evaluate"

    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in _KICKOFF]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        assert isinstance(call.func, ast.Attribute)
        line = first + call.lineno - 1
        obj, why = resolve(call.func.value)
        if why is None and not isinstance(obj, (Crew, Agent)):
            why = f"`{ast.unparse(call.func.value)}` is a {type(obj).__name__}, not a Crew or an Agent"
        if why is not None:
            notes.append(f"{where} kicks off something at line {line} that could not be followed: {why}; "
                         f"it stays the method's opaque code (QG006)")
            continue
        repeats = in_loop(call) or "for_each" in call.func.attr
        found.append(Kickoff(obj, line, repeats))
    return found, notes
