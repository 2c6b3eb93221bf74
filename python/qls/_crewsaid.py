"""What the person says to a crew or a flow, recorded for ``CrewGuard`` as ``user`` history
entries (SPEC §2 "Provenance, not authorship"), through CrewAI's own extension points:

- **The run's inputs** — ``crew.kickoff(inputs=...)`` and ``flow.kickoff(inputs=...)``, the
  values CrewAI interpolates into the tasks' descriptions (``"Pay what {request} says"``): the
  ``input`` interception point (``crewai.hooks``, after the ``before_kickoff_callbacks``) hands
  over the run's resolved inputs. Each value is one entry (a nested list or mapping, each of its
  strings and numbers); a flow's ``id`` (the state to restore) is no word of the person's. Only
  the **outermost** run's inputs count: a crew a flow's method kicks off, or a crew kicked off
  inside another crew's run, gets its inputs from code, and often from an earlier crew's output
  (the model's words), so they are not the person's. The ``execution_start`` and
  ``execution_end`` points count the runs open in the current context for that.
- **Human-input feedback** — a ``Task(human_input=True)``'s feedback, typed by the person at the
  answer's review: the guard wraps CrewAI's human-input provider (``set_provider``), and records
  the feedback when the provider turns it into the model's message
  (``_format_feedback_message``, the provider protocol's own step), before the agent works on it.

Not recorded: the task descriptions, expected outputs and the agents' roles, goals and
backstories (the developer's templates: the system prompt, not the person's message); the
model's answers and the tasks' outputs passed on as context; a flow's ``@human_feedback``
(it goes to the flow's code, and on to a crew only as a nested run's input); a standalone
``Agent.kickoff(messages)``, whose ``input`` point carries no inputs (the host records that
message with ``guard.user(text)``). A value not recorded reads as the model's: the person is
asked more often, never less.
"""

from __future__ import annotations

import contextvars
import json
from typing import Any, Callable, Mapping

__all__ = ["CrewSaid"]


def _leaves(value: Any) -> list[str]:
    """The text of each string and number in an input value, in order (a mapping's values, a
    list's items); anything else (a file, an object) is not text the person typed."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bool, int, float)):
        return [json.dumps(value)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _leaves(v)]
    return []


class CrewSaid:
    """The hooks and the human-input provider that record what the person says (``heard``)."""

    def __init__(self, heard: Callable[[str], bool]) -> None:
        self.heard = heard
        # The runs (crews, flows) open in this context, the outermost first.
        self._depth: contextvars.ContextVar[int] = contextvars.ContextVar("qls_crew_runs", default=0)
        self._token: contextvars.Token[Any] | None = None
        self._inner: Any = None

    # -- the run's inputs -------------------------------------------------------------------------

    def start(self, ctx: Any) -> None:
        self._depth.set(self._depth.get() + 1)

    def end(self, ctx: Any) -> None:
        self._depth.set(max(self._depth.get() - 1, 0))

    def inputs(self, ctx: Any) -> None:
        """The ``input`` point: the outermost run's inputs, each value recorded."""
        if self._depth.get() != 1:
            return
        given = getattr(ctx, "payload", None)
        if not isinstance(given, Mapping):
            return
        for key, value in given.items():
            if key == "id" and getattr(ctx, "flow", None) is not None:
                continue  # the flow state to restore, not a word of the person's
            for text in _leaves(value):
                self.heard(text)

    # -- installing -------------------------------------------------------------------------------

    def install(self) -> None:
        from crewai.core.providers.human_input import get_provider, set_provider
        from crewai.hooks import InterceptionPoint, register_hook

        register_hook(InterceptionPoint.EXECUTION_START, self.start)
        register_hook(InterceptionPoint.INPUT, self.inputs)
        register_hook(InterceptionPoint.EXECUTION_END, self.end)
        self._inner = get_provider()
        self._token = set_provider(_Provider(self._inner, self.heard))

    def uninstall(self) -> None:
        from crewai.core.providers.human_input import reset_provider, set_provider
        from crewai.hooks import InterceptionPoint, unregister_hook

        unregister_hook(InterceptionPoint.EXECUTION_START, self.start)
        unregister_hook(InterceptionPoint.INPUT, self.inputs)
        unregister_hook(InterceptionPoint.EXECUTION_END, self.end)
        if self._token is not None:
            try:
                reset_provider(self._token)
            except ValueError:  # uninstalled in another context than the one installed in
                set_provider(self._inner)
            self._token = None


class _Provider:
    """CrewAI's human-input provider (the one in place when the guard was installed), with the
    person's feedback recorded before the agent works on it."""

    def __init__(self, inner: Any, heard: Callable[[str], bool]) -> None:
        self.inner = inner
        self.heard = heard

    def setup_messages(self, context: Any) -> bool:
        return bool(self.inner.setup_messages(context))

    def post_setup_messages(self, context: Any) -> None:
        self.inner.post_setup_messages(context)

    def handle_feedback(self, formatted_answer: Any, context: Any) -> Any:
        return self.inner.handle_feedback(formatted_answer, _Listening(context, self.heard))

    async def handle_feedback_async(self, formatted_answer: Any, context: Any) -> Any:
        return await self.inner.handle_feedback_async(formatted_answer, _Listening(context, self.heard))


class _Listening:
    """The executor context a provider is given, passed through, except that the step turning
    the person's feedback into the model's message records the feedback first."""

    def __init__(self, inner: Any, heard: Callable[[str], bool]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_heard", heard)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def _format_feedback_message(self, feedback: str) -> Any:
        self._heard(feedback)
        return self._inner._format_feedback_message(feedback)
