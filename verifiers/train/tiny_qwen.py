"""A tiny random Qwen2-architecture model with a locally trained byte-level BPE tokenizer.

What a real inference server (vLLM, also its CPU build) can serve and the trainer can train,
with nothing downloaded: hidden size 64, 2 layers, head size 32, untied input and output
embeddings (an in-place weight reload in vLLM leaves a tied LM head stale). The tokenizer is a
byte-level BPE trained with ``tokenizers`` on a small built-in corpus; its chat template is
Qwen-style (``<|im_start|>role\\n...<|im_end|>\\n``) with hermes ``<tool_call>`` tags, so vLLM's
``--tool-call-parser hermes`` parses the model's tool calls. :func:`write_tiny_qwen` saves both
in Hugging Face format (cached: a directory with the same content is reused).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["QWEN_CHAT_TEMPLATE", "build_bpe_tokenizer", "build_tiny_qwen2", "write_tiny_qwen"]

IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")

# Qwen-style: the newline after <|im_end|> belongs to the template, not to the model's turn
QWEN_CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    '# Tools\nCall a function by answering <tool_call>{"name": NAME, "arguments": ARGS}'
    "</tool_call>. Functions:\n<tools>"
    "{% for t in tools %}{{ '\\n' }}{{ t | tojson }}{% endfor %}{{ '\\n' }}</tools><|im_end|>\n"
    "{% elif messages[0]['role'] == 'system' %}"
    "<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n"
    "{% endif %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' and loop.first %}"
    "{% elif m['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ m['content'] }}\n</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% endif %}"
    "{% for c in m.get('tool_calls') or [] %}"
    "{% set args = c['function']['arguments'] %}"
    '<tool_call>\n{"name": "{{ c[\'function\'][\'name\'] }}", "arguments": '
    "{% if args is string %}{{ args }}{% else %}{{ args | tojson }}{% endif %}}\n</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    "The quick brown fox jumps over the lazy dog. What is 1 + 2? It is 3.",
    "Say A. A A A. Answer with one word. The answer is 42.",
    '{"name": "add", "arguments": {"a": 1, "b": 2}} {"type": "function"}',
    "# Tools\nCall a function by answering. Functions:\n",
    "user assistant system tool call response content role",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 + - * / = ( ) [ ] { } < > : , . ! ?",
]
_VOCAB_SIZE = 512
_BUILD = 2  # bump when the model's configuration changes (invalidates cached directories)


def build_bpe_tokenizer() -> Any:
    """A byte-level BPE fast tokenizer (``_VOCAB_SIZE`` tokens) trained in process."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_VOCAB_SIZE - len(TOOL_TAGS) - 3,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True) for t in (ENDOFTEXT, IM_START, IM_END)])
    # not special: they must survive decoding for vLLM's hermes parser to find them
    tok.add_tokens([AddedToken(t, special=False) for t in TOOL_TAGS])
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, eos_token=IM_END, pad_token=ENDOFTEXT
    )
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    return tokenizer


def build_tiny_qwen2(tokenizer: Any, *, seed: int = 0, hidden_size: int = 64) -> Any:
    """A randomly initialised Qwen2 causal LM over ``tokenizer``'s vocabulary (fp32)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=2,
        num_attention_heads=hidden_size // 32,  # head size 32
        num_key_value_heads=hidden_size // 32,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids(IM_END),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.do_sample = False
    return model.float()  # type: ignore[no-untyped-call]


def write_tiny_qwen(path: str | Path, *, seed: int = 0) -> Path:
    """Save the tiny model and tokenizer (HF format, fp32 safetensors) to ``path``; a directory
    already holding this seed's build is kept as is. Returns ``path``."""
    out = Path(path)
    stamp = hashlib.sha256(
        json.dumps([QWEN_CHAT_TEMPLATE, _CORPUS, _VOCAB_SIZE, _BUILD, seed]).encode()
    ).hexdigest()[:16]
    if (out / ".vf-tiny-qwen").is_file() and (out / ".vf-tiny-qwen").read_text() == stamp:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-qwen-", dir=out.parent))
    tokenizer = build_bpe_tokenizer()
    model = build_tiny_qwen2(tokenizer, seed=seed)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / ".vf-tiny-qwen").write_text(stamp)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return out
