"""The text a rollout has said so far, for the two prompt shapes: chat and completion.

A :class:`Transcript` holds what the model is sent next (``prompt``: the original prompt plus
everything said since) and keeps ``state["completion"]`` in step with it. Both only grow:
each turn appends the model's reply and the environment's answer, so a rollout of ``T`` turns
costs ``O(T)`` appends, never a rebuilt history.

- :class:`ChatTranscript`: a list of messages; appends are in place.
- :class:`CompletionTranscript`: one string; appends make a new string, which is written back
  to ``state["completion"]`` (and ``state["_messages"]``) each time.
"""

from __future__ import annotations

from typing import Any

from verifiers.messages import AssistantMessage, TextMessage
from verifiers.types import Messages, ModelResponse, State

__all__ = [
    "ChatTranscript",
    "CompletionTranscript",
    "Transcript",
    "new_transcript",
    "render_text_rollout",
]


class Transcript:
    """What the model sees next; :meth:`add_response` and :meth:`add_env` append to it."""

    prompt: Messages | str

    def __len__(self) -> int:
        """Messages (chat) or characters (completion) in the prompt so far."""
        return len(self.prompt)

    def add_response(self, response: ModelResponse) -> Any:
        """Append the model's reply; returns the part it added (a message list or text)."""
        raise NotImplementedError

    def add_env(self, reply: Any) -> None:
        """Append the environment's answer (messages for chat, text for completion)."""
        raise NotImplementedError


class ChatTranscript(Transcript):
    def __init__(self, state: State) -> None:
        self.prompt: Messages = list(state["prompt"])
        self._completion: Messages = state["completion"]
        state["_messages"] = self.prompt

    def add_response(self, response: ModelResponse) -> Messages:
        message = response.message
        self.prompt.append(message)
        self._completion.append(message)
        return [message]

    def add_env(self, reply: Any) -> None:
        self.prompt.extend(reply)
        self._completion.extend(reply)


class CompletionTranscript(Transcript):
    def __init__(self, state: State) -> None:
        self.prompt: str = str(state["prompt"])
        self._state = state
        state["_messages"] = self.prompt

    def add_response(self, response: ModelResponse) -> str:
        text = response.content
        self._append(text)
        return text

    def add_env(self, reply: Any) -> None:
        self._append(reply)

    def _append(self, text: str) -> None:
        self.prompt += text
        self._state["_messages"] = self.prompt
        self._state["completion"] += text


def new_transcript(state: State, message_type: str) -> Transcript:
    """The transcript for ``message_type`` (``"chat"`` or ``"completion"``)."""
    return ChatTranscript(state) if message_type == "chat" else CompletionTranscript(state)


def render_text_rollout(state: State) -> None:
    """A completions-API rollout as 0.3.x shows it to rewards and callers: ``prompt`` a list
    with one text message, ``completion`` the model's turns as assistant messages and the
    environment's text between them as text messages. The texts stay in ``prompt_text`` and
    ``completion_text`` (the transcript, as trainers retokenize it)."""
    prompt, completion = state.get("prompt"), state.get("completion")
    if not isinstance(prompt, str) or not isinstance(completion, str):
        return
    state["prompt_text"], state["completion_text"] = prompt, completion
    transcript = prompt + completion
    steps = [s for s in state.get("trajectory") or [] if isinstance(s.get("completion"), str)]
    messages: list[Any] = []
    pos = len(prompt)
    for i, step in enumerate(steps):
        start = int(step["prompt_len"])
        if start > pos:  # text the environment added before this turn
            messages.append(TextMessage(content=transcript[pos:start]))
        end = start + len(step["completion"])
        messages.append(AssistantMessage(content=transcript[start:end]))
        pos = end
        if i == len(steps) - 1 and pos < len(transcript):
            messages.append(TextMessage(content=transcript[pos:]))
    if not steps and completion:
        messages.append(TextMessage(content=completion))
    state["prompt"] = [TextMessage(content=prompt)]
    state["completion"] = messages
