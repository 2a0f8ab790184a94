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

from verifiers.types import Messages, ModelResponse, State

__all__ = ["ChatTranscript", "CompletionTranscript", "Transcript", "new_transcript"]


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
