"""A tiny randomly initialised causal LM, a character-level tokenizer and a toy environment.

For CPU runs of the reference loop and for tests: nothing is downloaded. The tokenizer has one
token per printable ASCII character plus newline, and special tokens for chat roles; its chat
template renders ``<|role|>content<|end|>`` per message, so each turn's prompt extends the
previous one token for token. :func:`letter_environment` is a task such a model learns within
a few dozen steps (``configs/train-tiny.toml`` trains it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHAT_TEMPLATE", "build_char_tokenizer", "build_tiny_model", "letter_environment"]

ROLES = ("system", "user", "assistant", "tool")
PAD, EOS, UNK = "<pad>", "<|end|>", "<unk>"

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% endif %}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}"
    "<tool_call>{{ c['function'] | tojson }}</tool_call>{% endfor %}{% endif %}"
    "<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_char_tokenizer() -> Any:
    """A Hugging Face fast tokenizer with one token per character (no files, no downloads)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {PAD: 0, EOS: 1, UNK: 2}
    for ch in [chr(i) for i in range(32, 127)] + ["\n"]:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([AddedToken(f"<|{r}|>", special=True) for r in ROLES])
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_model(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 1024,
    seed: int = 0,
    eos_token_id: int = 1,
    pad_token_id: int = 0,
) -> Any:
    """A randomly initialised Llama-architecture causal LM (fp32) with a fixed seed."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.float()  # type: ignore[no-untyped-call]


def letter_environment(num_examples: int = 16, letter: str = "A", **kwargs: Any) -> Any:
    """A single-turn environment whose reward is the share of ``letter`` in the answer.

    A randomly initialised model says it rarely, so the mean reward starts near zero and rises
    as the policy learns: a smoke test of an RL loop (``env.factory =
    "verifiers.train.tiny:letter_environment"``). ``kwargs`` go to
    :class:`verifiers.SingleTurnEnv`.
    """
    if len(letter) != 1:
        raise ValueError(f"letter must be one character, got {letter!r}")
    import verifiers as vf

    def share_of_letter(completion: Any, **_: Any) -> float:
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        return text.count(letter) / len(text) if text else 0.0

    share_of_letter.__name__ = f"share_of_{letter}"
    rows = [{"question": f"Say {letter} ({i})", "answer": letter} for i in range(num_examples)]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[share_of_letter]), **kwargs)
