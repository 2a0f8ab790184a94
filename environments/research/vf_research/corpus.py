"""A local document corpus, a BM25 index over it, and questions answerable from it.

The default corpus is built at load time from the installed Python standard library: one
document per module (its docstring) and one per public function or class (signature and
docstring), read with :mod:`inspect`. Nothing is downloaded and nothing is copied into the
package; the corpus always matches the interpreter that runs the environment.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "STDLIB_MODULES",
    "Corpus",
    "Document",
    "build_stdlib_corpus",
    "generate_questions",
    "load_corpus_file",
    "normalize",
]

STDLIB_MODULES = (
    "argparse",
    "array",
    "base64",
    "binascii",
    "bisect",
    "calendar",
    "cmath",
    "colorsys",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "filecmp",
    "fnmatch",
    "fractions",
    "functools",
    "getopt",
    "glob",
    "graphlib",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "linecache",
    "locale",
    "math",
    "mimetypes",
    "operator",
    "os.path",
    "pathlib",
    "pickle",
    "posixpath",
    "pprint",
    "queue",
    "quopri",
    "random",
    "re",
    "reprlib",
    "sched",
    "secrets",
    "shlex",
    "shutil",
    "statistics",
    "string",
    "struct",
    "tarfile",
    "tempfile",
    "textwrap",
    "timeit",
    "tokenize",
    "unicodedata",
    "urllib.parse",
    "uuid",
    "wave",
    "weakref",
    "zipfile",
    "zlib",
)

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    text: str
    kind: str = "text"  # "module", "function", "class" or "text"
    params: tuple[tuple[str, str], ...] = ()  # (name, repr(default)) of simple defaults
    n_params: int | None = None  # parameters in the signature, when it is known


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("_", " "))


def normalize(answer: str | None) -> str:
    """Lower case; surrounding whitespace, backticks, matching quotes, a trailing period and a
    trailing ``()`` removed (repeatedly, so "`f()`." becomes "f")."""
    if answer is None:
        return ""
    text, previous = answer, None
    while text != previous:
        previous = text
        text = text.strip().rstrip(".").strip("`")
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        text = text.removesuffix("()")
    return text.lower()


@dataclass
class Corpus:
    """Documents with a BM25 index (k1 = 1.5, b = 0.75; titles count twice)."""

    documents: list[Document]
    _by_id: dict[str, Document] = field(init=False, repr=False)
    _tf: list[Counter[str]] = field(init=False, repr=False)
    _df: Counter[str] = field(init=False, repr=False)
    _lengths: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {d.id: d for d in self.documents}
        if len(self._by_id) != len(self.documents):
            raise ValueError("document ids must be unique")
        self._tf, self._df, self._lengths = [], Counter(), []
        for d in self.documents:
            toks = _tokens(d.title) * 2 + _tokens(d.text)
            tf = Counter(toks)
            self._tf.append(tf)
            self._df.update(tf.keys())
            self._lengths.append(len(toks))
        self._avg = sum(self._lengths) / max(len(self._lengths), 1)

    def get(self, doc_id: str) -> Document | None:
        return self._by_id.get(doc_id.strip())

    def search(self, query: str, k: int = 5) -> list[tuple[Document, float]]:
        terms = set(_tokens(query))
        n = len(self.documents)
        scored: list[tuple[float, int]] = []
        for i, tf in enumerate(self._tf):
            s = 0.0
            for t in terms:
                f = tf.get(t)
                if f:
                    idf = math.log(1 + (n - self._df[t] + 0.5) / (self._df[t] + 0.5))
                    s += idf * f * 2.5 / (f + 1.5 * (0.25 + 0.75 * self._lengths[i] / self._avg))
            if s > 0:
                scored.append((s, i))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [(self.documents[i], s) for s, i in scored[:k]]


def _simple_default(value: Any) -> bool:
    """A default a question can ask for: ``None`` or a short, non-empty literal."""
    if value is None:
        return True
    return isinstance(value, bool | int | float | str) and value != "" and len(repr(value)) <= 30


def _document(module: str, name: str, obj: Any) -> Document | None:
    doc = inspect.getdoc(obj)
    if not doc or len(doc) < 40:
        return None
    kind = "class" if inspect.isclass(obj) else "function"
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = None
    params: list[tuple[str, str]] = []
    header = f"{module}.{name}"
    if sig is not None:
        header += str(sig)
        for p in sig.parameters.values():
            if (
                p.default is not inspect.Parameter.empty
                and _simple_default(p.default)
                and normalize(repr(p.default))  # an answer that survives normalisation
            ):
                params.append((p.name, repr(p.default)))
    return Document(
        id=f"{module}.{name}",
        title=f"{module}.{name}",
        text=f"{header}\n\n{doc}",
        kind=kind,
        params=tuple(params),
        n_params=len(sig.parameters) if sig is not None else None,
    )


def build_stdlib_corpus(modules: tuple[str, ...] = STDLIB_MODULES) -> Corpus:
    """One document per module and per documented public function or class it defines."""
    docs: list[Document] = []
    for modname in modules:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        mdoc = inspect.getdoc(mod)
        if mdoc:
            docs.append(Document(id=modname, title=f"module {modname}", text=mdoc, kind="module"))
        public = getattr(mod, "__all__", None)
        names = sorted(public) if isinstance(public, list | tuple) else sorted(vars(mod))
        for name in names:
            if name.startswith("_"):
                continue
            obj = getattr(mod, name, None)
            if not (inspect.isroutine(obj) or inspect.isclass(obj)):
                continue
            owner = getattr(obj, "__module__", None)
            if owner not in (modname, None) and not (owner or "").lstrip("_").startswith(
                modname.split(".")[-1]
            ):
                continue  # re-exported from elsewhere
            d = _document(modname, name, obj)
            if d is not None:
                docs.append(d)
    seen: set[str] = set()
    unique = [d for d in docs if not (d.id in seen or seen.add(d.id))]  # type: ignore[func-returns-value]
    return Corpus(unique)


def load_corpus_file(path: str | Path) -> Corpus:
    """A corpus from a JSONL file with ``id``, ``title`` and ``text`` on each line."""
    docs = []
    for n, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            docs.append(Document(id=str(row["id"]), title=str(row["title"]), text=str(row["text"])))
        except (ValueError, KeyError) as e:
            raise ValueError(f"{path}:{n}: expected JSON with id, title, text ({e})") from None
    return Corpus(docs)


def _first_sentence(doc: Document) -> str | None:
    body = doc.text.split("\n\n", 1)[1] if doc.kind in ("function", "class") else doc.text
    para = " ".join(body.split("\n\n", 1)[0].split())
    m = re.match(r"(.+?[.!?])(\s|$)", para)
    sentence = m.group(1) if m else para
    words = sentence.split()
    if len(words) < 6 or len(sentence) > 200:
        return None
    short = doc.id.rsplit(".", 1)[-1].lower()
    if short in sentence.lower():
        return None  # would give the name away
    return sentence


def generate_questions(corpus: Corpus, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` questions answerable from ``corpus``, mixing four kinds:

    - ``which_module``: which module defines a uniquely named function or class;
    - ``identify``: the dotted name of the function or class whose documentation opens with a
      given (unique) sentence;
    - ``default``: the default value of a parameter of a function found by its description;
    - ``compare``: which of two functions, each found by its description, takes more
      parameters (two searches, two documents).

    Each question carries ``doc_ids`` (the documents that answer it) and ``plan``, the tool
    calls that find the answer (``[[tool, arguments], ...]``, before ``finish``).
    """
    entries = [d for d in corpus.documents if d.kind in ("function", "class")]
    short_names = Counter(d.id.rsplit(".", 1)[-1] for d in entries)
    sentences = {d.id: _first_sentence(d) for d in entries}
    sentence_counts = Counter(s for s in sentences.values() if s)
    unique_name = [d for d in entries if short_names[d.id.rsplit(".", 1)[-1]] == 1]
    described = [d for d in entries if sentences[d.id] and sentence_counts[sentences[d.id]] == 1]
    with_default = [d for d in described if d.params and d.kind == "function"]
    countable = [d for d in described if d.kind == "function" and d.n_params is not None]
    pools: list[tuple[str, list[Document]]] = [
        ("which_module", unique_name),
        ("identify", described),
        ("default", with_default),
        ("compare", countable if len({d.n_params for d in countable}) > 1 else []),
    ]
    pools = [(k, p) for k, p in pools if p]
    if not pools:
        raise ValueError("the corpus has no documents that questions can be made from")
    r = random.Random(seed)
    out: list[dict[str, Any]] = []
    used: set[tuple[str, str]] = set()
    capacity = sum(len(p) for _, p in pools)
    while len(out) < min(n, capacity):
        kind, pool = pools[len(out) % len(pools)]
        d = r.choice(pool)
        if (kind, d.id) in used:
            if sum(1 for k, _ in used if k == kind) >= len(pool):
                pools = [(k, p) for k, p in pools if k != kind]
            continue
        used.add((kind, d.id))
        module, short = d.id.rsplit(".", 1)
        doc_ids = [d.id]
        if kind == "which_module":
            question = (
                f"Which Python standard-library module defines a {d.kind} named `{short}`? "
                f"Answer with the module's dotted name only."
            )
            answer, queries = module, [short]
        elif kind == "identify":
            question = (
                f"Which Python standard-library {d.kind} is documented with this opening "
                f'sentence: "{sentences[d.id]}"? Answer with its full dotted name '
                f"(module.name)."
            )
            answer, queries = d.id, [str(sentences[d.id])]
        elif kind == "default":
            pname, default = r.choice(d.params)
            question = (
                f"A Python standard-library function is documented with this opening sentence: "
                f'"{sentences[d.id]}". What is the default value of its `{pname}` parameter? '
                f"Answer with the Python literal."
            )
            answer, queries = default, [str(sentences[d.id])]
        else:
            other = r.choice([e for e in pool if e.n_params != d.n_params])
            doc_ids = [d.id, other.id]
            assert d.n_params is not None and other.n_params is not None
            answer = d.id if d.n_params > other.n_params else other.id
            queries = [str(sentences[d.id]), str(sentences[other.id])]
            question = (
                "Two Python standard-library functions are documented with these opening "
                f'sentences: (1) "{queries[0]}" and (2) "{queries[1]}". Which of the two takes '
                "more parameters (count every parameter in its signature)? Answer with its full "
                "dotted name (module.name)."
            )
        plan: list[list[Any]] = [["search", {"query": q}] for q in queries]
        plan += [["open", {"doc_id": i}] for i in doc_ids]
        out.append(
            {"question": question, "answer": answer, "kind": kind, "doc_ids": doc_ids, "plan": plan}
        )
    return out
