"""What the API's modules share, under public names, so no module reaches into another's private
helpers: the one input error, the one ``Origins`` type, the base every framework guard derives
from (the same attribute names everywhere), the person's yes, and the deprecation of old names.

The API's one naming scheme (``tests/test_api_shape.py`` walks it):

- each framework's module ``qls.<m>`` (``langgraph``, ``openai_agents``, ``adk``, ``crewai``,
  ``autogen``) holds ``export_<m>(app, *, tools=None, …)``, also as ``qls.export_<m>``;
- every guard takes the ``qls.Guard`` first, then (where the framework needs them up front) the
  ``tools``, and everything else by keyword, ``origins`` among them; it keeps the ``Guard`` as
  ``.guard``, the origins function as ``.origins`` and what became of each call as ``.outcomes``;
- a bad input to any entry point raises ``qls.QlsInputError``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
import warnings
from collections.abc import Mapping as AbcMapping
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, Mapping, TypeVar, Union

if TYPE_CHECKING:  # pragma: no cover - types only (qls.guard imports this module)
    from qls.guard import Guard, Outcome

PathLike = Union[str, "os.PathLike[str]"]

#: Where an argument's value came from (SPEC §2): typed by a person, the model's, a tool's result,
#: or carried by a hand-off.
Origin = Literal["typed", "model", "tool", "handoff"]

#: The one origins function every guard takes: ``(tool, args) -> {argument: origin}`` (an
#: argument it leaves out is the model's), or ``"auto"`` for every call, the default: each
#: argument's origin traced from its value against the person's messages and the earlier results
#: (SPEC §2 "Provenance, not authorship").
Origins = Callable[[str, Mapping[str, Any]], Union[Mapping[str, Origin], Literal["auto"]]]

#: A call's origins as the check reads them: per argument, or ``"auto"`` (traced).
CallOrigins = Union[Mapping[str, Origin], Literal["auto"]]


def message_text(content: Any) -> str | None:
    """The text of a framework's message content: a string, or the text parts of a list of
    content blocks (``{"type": "text", "text": …}``, objects with ``.text``, plain strings);
    ``None`` when it holds no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, AbcMapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(getattr(block, "text", None), str):
                parts.append(block.text)
        return "\n".join(parts) if parts else None
    return None


class QlsInputError(ValueError):
    """An input ``qls`` could not read: a file (the message is the binary's: ``file:line: …``),
    or an argument of the Python API. Every entry point raises it for a bad input."""


F = TypeVar("F", bound=Callable[..., Any])


def deprecated_alias(new: F, old: str) -> F:
    """``new`` under its old name ``old``, kept for one release: each call warns."""

    @functools.wraps(new)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`{old}` is now `{new.__name__}` (the old name goes away next release)",
                      DeprecationWarning, stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = old
    alias.__qualname__ = old
    return alias  # type: ignore[return-value]


def check_overlays(exporter: str, **overlays: Any) -> None:
    """An exporter's overlays (``tools``, ``agents``): ``None`` or a mapping from a name to a
    mapping of fields; checked before the app is read."""
    for name, value in overlays.items():
        if value is None:
            continue
        if not isinstance(value, AbcMapping):
            raise QlsInputError(f"{exporter}: `{name}` is a mapping from a name to its fields, not {type(value).__name__}")
        for key, fields in value.items():
            if not isinstance(fields, AbcMapping):
                raise QlsInputError(f"{exporter}: `{name}[{key!r}]` is a mapping of fields (e.g. "
                                    f"{{\"effect\": \"read\"}}), not {type(fields).__name__}")


def framework_class(exporter: str, module: str, name: str, what: str) -> Any:
    """The framework's class ``module.name`` an exporter takes, or ``QlsInputError`` when the
    framework is not installed (no app of it can have been built, so the app is not one)."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # not installed, or a namespace package of that name
        raise QlsInputError(f"{exporter} takes {what}, and `{module}.{name}` is not installed") from None


def require_app(exporter: str, app: Any, ok: bool, what: str) -> None:
    """``QlsInputError`` unless ``ok`` (``app`` is what ``exporter`` reads: ``what``)."""
    if not ok:
        raise QlsInputError(f"{exporter} takes {what}, not {type(app).__name__}")


def _one_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes one positional argument (the old origins function, given the tool
    call) rather than two (the tool and its arguments)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 1 or (len(positional) > 1 and positional[1].default is not inspect.Parameter.empty)


def human_texts(messages: Any) -> list[str]:
    """The person's messages among LangChain messages (``HumanMessage``, type ``human``) or their
    dict form (``{"role": "user" | "human", "content": …}``), oldest first, as text."""
    out: list[str] = []
    for m in messages or []:
        if isinstance(m, AbcMapping):
            role, content = m.get("role", m.get("type")), m.get("content")
        else:
            role, content = getattr(m, "type", None), getattr(m, "content", None)
        if role in ("human", "user"):
            text = message_text(content)
            if text is not None:
                out.append(text)
    return out


class FrameworkGuard:
    """What every framework guard is: the ``qls.Guard`` it puts in front of the framework's tools
    (``.guard``), the origins function (``.origins``) and what became of each call it acted on,
    in order (``.outcomes``). The exporters recognise an app's guard by this class."""

    guard: "Guard"
    origins: Origins | None
    outcomes: "list[Outcome]"

    def _setup(self, guard: Any, origins: Any) -> None:
        from qls.guard import Guard

        if not isinstance(guard, Guard):
            raise QlsInputError(f"{type(self).__name__} takes a qls.Guard first, not {type(guard).__name__}")
        if origins == "auto":
            origins = None
        if origins is not None and not callable(origins):
            raise QlsInputError(f"{type(self).__name__}: `origins` is \"auto\" or a function (tool, args) -> "
                                f"{{argument: origin}}, not {type(origins).__name__}")
        if origins is not None and _one_argument(origins):
            warnings.warn(f"{type(self).__name__}: an origins function of one tool call is deprecated; "
                          "give one of (tool, args) (the old form goes away next release)",
                          DeprecationWarning, stacklevel=3)
            old = origins

            def origins(tool: str, args: Mapping[str, Any]) -> Mapping[str, Origin]:
                return old({"name": tool, "args": dict(args), "type": "tool_call"})  # type: ignore[no-any-return]

        self.guard = guard
        self.origins = origins
        self.outcomes = []
        self._heard: set[str] = set()
        self._heard_lock = threading.Lock()

    def heard(self, text: str) -> bool:
        """Records ``text``, something the person said as the framework delivered it, as a
        ``user`` history entry (SPEC §2 "Provenance, not authorship"), unless this guard recorded
        the same text already; whether it recorded it. Once per text is exact for tracing: a value
        occurring in a message occurs in its first copy, which came earlier. Blank text says
        nothing and is not recorded."""
        if not isinstance(text, str) or not text.strip():
            return False
        # Held while the entry is written: a call decided on another thread after this returns
        # (or after a duplicate returned False) finds the entry on the history.
        with self._heard_lock:
            if text in self._heard:
                return False
            self.guard.user(text)
            self._heard.add(text)
        return True

    def origins_of(self, tool: str, args: Mapping[str, Any]) -> CallOrigins:
        """Each argument's origin, by the origins function; without one (the default),
        ``"auto"``: traced by the check from the values (SPEC §2 "Provenance, not authorship")."""
        if self.origins is None:
            return "auto"
        given = self.origins(tool, args)
        return "auto" if given == "auto" else dict(given)

    @property
    def qls_guard(self) -> "Guard":
        """The old name of ``.guard`` (kept one release)."""
        warnings.warn(f"`{type(self).__name__}.qls_guard` is now `.guard` (the old name goes away next release)",
                      DeprecationWarning, stacklevel=2)
        return self.guard


def guard_of(obj: Any) -> Any:
    """The ``qls.Guard`` behind ``obj``: a framework guard's ``.guard``, or the ``qls_guard`` a
    guard marks the framework's objects with (a wrapped tool, a callback, a hook); else ``None``."""
    if isinstance(obj, FrameworkGuard):
        return obj.guard
    if obj is None:
        return None
    return getattr(obj, "qls_guard", None)


_YES = (True, "yes", "y", "approve", "approved")


def approved(answer: Any) -> bool:
    """Whether a person's answer (a resume value, what ``ask`` returned) is a yes."""
    if isinstance(answer, Mapping):
        answer = answer.get("approve", answer.get("decision"))
    if isinstance(answer, str):
        answer = answer.strip().lower()
    return answer in _YES


def wait(aw: Awaitable[Any]) -> Any:
    """An awaitable's value from synchronous code (on a worker thread when a loop is running)."""
    import concurrent.futures

    async def go() -> Any:
        return await aw

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(go())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, go()).result()
