"""What the person says to AutoGen AgentChat agents, recorded for ``AutogenGuard`` as ``user``
history entries (SPEC §2 "Provenance, not authorship"), through AgentChat's own extension points:

- **The messages an agent is given** — ``run(task=...)``, ``run_stream``, ``on_messages`` and a
  team's task all reach an ``AssistantAgent`` as messages it adds to its **model context**
  (``model_context=``, a ``ChatCompletionContext``) before its model is called. The guard's
  context records each ``UserMessage`` whose ``source`` is a person's (``"user"``, the source
  AgentChat gives a task, and a ``HandoffMessage`` the host sends back from the user in a
  ``Swarm``; a host whose people speak under other names lists them), then hands every message to
  the context it wraps. A message from another agent of the team has that agent's name as its
  source: the model's words, not recorded.
- **A ``UserProxyAgent``'s replies** — the text its ``input_func`` returns, what the person typed:
  the guard's ``input(fn)`` records it as it is returned.

Not recorded: the system message, a context's ``initial_messages`` (the developer's few-shot
examples), memory, tool results (the history has them as results) and the agents' answers.
A value not recorded reads as the model's: the person is asked more often, never less.
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, List, Mapping, Optional, Sequence, Union, cast

from autogen_core import CancellationToken
from autogen_core.model_context import ChatCompletionContext, UnboundedChatCompletionContext
from autogen_core.models import LLMMessage, UserMessage

from qls._shared import message_text

__all__ = ["PeopleContext", "recording_input"]

SyncInput = Callable[[str], str]
AsyncInput = Callable[[str, Optional[CancellationToken]], Awaitable[str]]


class PeopleContext(ChatCompletionContext):
    """A model context that records the person's messages (``heard``) and keeps every message
    in the context it wraps (``inner``; an unbounded one by default), which answers for it."""

    def __init__(self, heard: Callable[[str], bool], inner: ChatCompletionContext | None = None,
                 people: Sequence[str] = ("user",)) -> None:
        super().__init__()
        self._heard = heard
        self._inner = inner if inner is not None else UnboundedChatCompletionContext()
        self._people = frozenset(people)

    async def add_message(self, message: LLMMessage) -> None:
        if isinstance(message, UserMessage) and message.source in self._people:
            text = message_text(message.content)
            if text is not None:
                self._heard(text)
        await self._inner.add_message(message)

    async def get_messages(self) -> List[LLMMessage]:
        return await self._inner.get_messages()

    async def clear(self) -> None:
        await self._inner.clear()

    async def save_state(self) -> Mapping[str, Any]:
        return await self._inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self._inner.load_state(state)


def recording_input(heard: Callable[[str], bool], fn: Union[SyncInput, AsyncInput]) -> Union[SyncInput, AsyncInput]:
    """``fn``, a ``UserProxyAgent``'s ``input_func`` (sync ``(prompt)`` or async ``(prompt,
    cancellation_token)``, the form kept: AgentChat tells them apart), with each reply recorded
    as it is returned."""
    if inspect.iscoroutinefunction(fn):
        afn = cast(AsyncInput, fn)

        async def ainput(prompt: str, cancellation_token: Optional[CancellationToken] = None) -> str:
            reply = await afn(prompt, cancellation_token)
            heard(reply)
            return reply

        return ainput
    sfn = cast(SyncInput, fn)

    def sinput(prompt: str) -> str:
        reply = sfn(prompt)
        heard(reply)
        return reply

    return sinput
