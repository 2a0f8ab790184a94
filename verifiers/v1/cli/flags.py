"""Command lines for a v1 config, in the shape verifiers 0.4's CLIs take: a config's fields as
dotted, kebab-cased flags (``--env.agent.max-turns 4``), ``--flag`` / ``--no-flag`` for a bool,
``--group`` / ``--no-group`` for an optional sub-config, space-separated or JSON lists, JSON
objects for mappings, ``@ FILE`` (TOML or JSON) for a whole config and ``--group @ FILE`` for
one block; flags win over files, later files over earlier ones.

The flags a command line may use are read from the config class with its ``env`` block
narrowed first (by the taskset, env and harness ids the command line and its files name), so
an env's own fields (its seats, its taskset's knobs) are flags, and a flag that names nothing
is an error that lists the closest valid ones.
"""

from __future__ import annotations

import difflib
import json
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ValidationError

from verifiers.errors import ConfigError
from verifiers.v1.configs.agent import deep_merge

__all__ = ["FlagTable", "flag_table", "format_flags", "parse_config_argv"]

CONFIG_SUFFIXES = (".toml", ".json")
"""The config files ``@`` loads."""

Kind = Literal["bool", "list", "mapping", "value"]
T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Flag:
    """One leaf field reachable as ``--spelling``."""

    path: tuple[str, ...]
    kind: Kind
    nullable: bool
    default: Any


@dataclass
class FlagTable:
    """Every flag of one (narrowed) config class, by its kebab-cased dotted spelling."""

    leaves: dict[str, Flag] = field(default_factory=dict)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    optional_groups: set[str] = field(default_factory=set)
    open_groups: set[str] = field(default_factory=set)
    """Groups that keep unknown keys (sampling's provider-specific knobs)."""
    aliases: dict[tuple[str, ...], dict[str, str]] = field(default_factory=dict)
    """Per group path: every accepted key spelling -> the field name."""
    shorts: dict[str, str] = field(default_factory=dict)
    """``-x`` -> the spelling of the leaf whose alias is that one letter."""
    short_owners: dict[str, list[str]] = field(default_factory=dict)
    """``x`` -> every leaf whose alias is that one letter (more than one: ``-x`` is
    ambiguous, and using it is an error naming them)."""
    types: dict[tuple[str, ...], type[BaseModel]] = field(default_factory=dict)
    """Per group path: the (narrowed) config class its fields are read from."""
    tags: dict[tuple[str, ...], Any] = field(default_factory=dict)
    """Per path of a tagged union of configs: the ``type`` of the variant in use (a block
    that sets some fields but no tag stays that variant)."""

    def spellings(self) -> list[str]:
        return sorted({*self.leaves, *self.groups})


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> tuple[list[Any], bool]:
    """The members of a union (each unwrapped) and whether None is one of them."""
    annotation = _strip(annotation)
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return [annotation], False
    out: list[Any] = []
    nullable = False
    for arg in typing.get_args(annotation):
        inner, inner_nullable = _members(arg)
        out += [a for a in inner if a is not type(None)]
        nullable = nullable or inner_nullable or _strip(arg) is type(None)
    return out, nullable


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _pick_variant(models: list[type[BaseModel]], default: Any, data: Any) -> type[BaseModel]:
    """The member of a model union the data's ``type`` tag names, else the default's class."""
    tag = data.get("type") if isinstance(data, dict) else None
    for model in models:
        if tag is not None and model.model_fields.get("type") is not None:
            if model.model_fields["type"].default == tag:
                return model
    if isinstance(default, BaseModel) and type(default) in models:
        return type(default)
    return models[0]


@dataclass(frozen=True)
class _Context:
    taskset_id: str


def _narrow(model: type[BaseModel], data: Any, ctx: _Context) -> type[BaseModel]:
    """An env, taskset or harness config class narrowed to the plugin its ids name."""
    from verifiers.v1.configs import EnvConfig, HarnessConfig, TasksetConfig
    from verifiers.v1.utils import loaders

    block = data if isinstance(data, dict) else {}
    if issubclass(model, EnvConfig):
        taskset = block.get("taskset")
        taskset_id = taskset.get("id", "") if isinstance(taskset, dict) else taskset or ""
        return loaders.env_config_type(str(taskset_id), str(block.get("id") or ""))
    if issubclass(model, TasksetConfig) and block.get("id"):
        return loaders.taskset_config_type(str(block["id"]))
    if issubclass(model, HarnessConfig):
        ident = data if isinstance(data, str) else block.get("id")
        return loaders.harness_config_type(str(ident or loaders.default_harness_id(ctx.taskset_id)))
    return model


def _kind(annotation: Any) -> Kind:
    members, _ = _members(annotation)
    if len(members) == 1:
        only = members[0]
        origin = typing.get_origin(only) or only
        if only is bool:
            return "bool"
        if origin in (list, tuple, set, frozenset):
            return "list"
        if origin is dict:
            return "mapping"
    return "value"


def _walk(
    cls: type[BaseModel],
    data: Any,
    prefix: str,
    path: tuple[str, ...],
    table: FlagTable,
    ctx: _Context,
) -> None:
    names: dict[str, str] = {}
    block = data if isinstance(data, dict) else {}
    for name, info in cls.model_fields.items():
        spellings = [name]
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias] if alias else []
        spellings += [c for c in choices if isinstance(c, str) and c != name]
        for spelling in spellings:
            names[spelling] = name
        members, nullable = _members(info.annotation)
        models = [m for m in members if _is_model(m)]
        sub = next((block[s] for s in spellings if s in block), None)
        keys = [f"{prefix}.{_kebab(s)}" if prefix else _kebab(s) for s in spellings]
        if models and len(models) == len(members):
            model = _narrow(_pick_variant(models, info.default, sub), sub, ctx)
            table.types[(*path, name)] = model
            if len(models) > 1 and "type" in model.model_fields:
                table.tags[(*path, name)] = model.model_fields["type"].default
            for key in keys:
                table.groups[key] = (*path, name)
                if nullable:
                    table.optional_groups.add(key)
                if model.model_config.get("extra") == "allow":
                    table.open_groups.add(key)
            _walk(model, sub, keys[0], (*path, name), table, ctx)
            for key in keys[1:]:  # an alias of a group reaches the same fields
                for leaf, flag in list(table.leaves.items()):
                    if leaf.startswith(keys[0] + "."):
                        table.leaves[key + leaf[len(keys[0]) :]] = flag
            continue
        flag = Flag((*path, name), _kind(info.annotation), nullable, info.default)
        for key, spelling in zip(keys, spellings, strict=True):
            table.leaves[key] = flag
            if len(spelling) == 1 and spelling != name:  # a one-letter alias, not a field
                table.short_owners.setdefault(spelling, []).append(keys[0])
    table.aliases[path] = names


def flag_table(cls: type[BaseModel], data: dict[str, Any]) -> FlagTable:
    """The flags of ``cls`` with its plugin blocks narrowed by the ids in ``data``."""
    env = data.get("env") if isinstance(data.get("env"), dict) else {}
    taskset = env.get("taskset") if isinstance(env, dict) else None
    taskset_id = taskset.get("id", "") if isinstance(taskset, dict) else taskset or ""
    table = FlagTable()
    _walk(cls, data, "", (), table, _Context(str(taskset_id)))
    # a one-letter alias is a short flag where it is the alias of one field (a field that is
    # itself named with one letter, an env's ``n``, is reached by its dotted flag only, so
    # ``-n`` stays ``--select.limit`` as in 0.4.0)
    table.shorts = {k: v[0] for k, v in table.short_owners.items() if len(v) == 1}
    return table


def _load_file(path: str) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"config file {path} does not exist")
    text = file.read_text("utf-8")
    try:
        if file.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif file.suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(f"config file {path}: give a .toml or .json file")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"config file {path} does not parse: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of settings")
    return data


def _nest(path: tuple[str, ...] | list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(path):
        out = {part: out}
    return typing.cast(dict[str, Any], out)


def _split(token: str) -> tuple[str, str | None]:
    name, eq, value = token.partition("=")
    return name, value if eq else None


def _file_ref(token: str) -> bool:
    """``@FILE.toml`` / ``@FILE.json`` written without a space (another ``@word`` is a value,
    such as a model preset ``@preset/name``)."""
    return token.startswith("@") and token.endswith(CONFIG_SUFFIXES)


def _files(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``argv`` without its ``@ FILE`` / ``--group @ FILE`` parts, and their merged data."""
    rest: list[str] = []
    data: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if token == "@" or _file_ref(token):
            name = token[1:] or nxt
            if not name:
                raise ConfigError("@ needs a config file after it: @ FILE.toml")
            data = deep_merge(data, _load_file(name))
            i += 1 if token[1:] else 2
            continue
        if token.startswith("--") and nxt is not None and (nxt == "@" or _file_ref(nxt)):
            name = nxt[1:] or (argv[i + 2] if i + 2 < len(argv) else "")
            if not name:
                raise ConfigError(f"{token} @ needs a config file after it")
            path = token[2:].replace("-", "_").split(".")
            data = deep_merge(data, _nest(path, _load_file(name)))
            i += 2 if nxt[1:] else 3
            continue
        rest.append(token)
        i += 1
    return rest, data


def _ids(argv: list[str]) -> dict[str, Any]:
    """The plugin ids and union tags the flags set (``--X.id V``, ``--X.type V``), ahead of
    the typed parse that needs them to know the other flags."""
    out: dict[str, Any] = {}
    for i, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, value = _split(token)
        if not name.endswith((".id", ".type")):
            continue
        if value is None:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                continue
            value = argv[i + 1]
        out = deep_merge(out, _nest(name[2:].replace("-", "_").split("."), value))
    return out


def _canonical(data: Any, path: tuple[str, ...], table: FlagTable) -> Any:
    """``data`` with alias keys renamed to their field names (``rollouts_per_example`` and
    ``-r`` then meet as one key, the command line's winning)."""
    if not isinstance(data, dict):
        return data
    names = table.aliases.get(path)
    if names is None:
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = str(names.get(key, key))
        out[name] = _canonical(value, (*path, name), table)
    return out


def _looks_like_value(token: str) -> bool:
    if not token.startswith("-"):
        return True
    try:
        float(token)
    except ValueError:
        return False
    return True


def _scalar(raw: str, flag: Flag | None) -> Any:
    if raw == "None" and (flag is None or flag.nullable):
        return None
    if flag is None:  # a key of an open group: numbers and booleans as such
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _suggest(name: str, table: FlagTable) -> str:
    close = difflib.get_close_matches(name, table.spellings(), n=3, cutoff=0.6)
    if not close:
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        if parent in table.groups:
            close = sorted(s for s in table.leaves if s.startswith(parent + "."))[:5]
    return f" (did you mean {', '.join('--' + c for c in close)}?)" if close else ""


def _parse_flags(argv: list[str], table: FlagTable, hints: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    problems: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in hints:
            problems.append(f"{token}: {hints[token]}")
            i += (
                1 if "=" in token or i + 1 >= len(argv) or not _looks_like_value(argv[i + 1]) else 2
            )
            continue
        if token.startswith("-") and not token.startswith("--") and len(token) == 2:
            short = table.shorts.get(token[1])
            owners = table.short_owners.get(token[1], [])
            if short is None and len(owners) > 1:
                problems.append(
                    f"{token} is ambiguous in this config: it is the short form of "
                    + " and of ".join(f"--{o}" for o in owners)
                    + "; write the one you mean"
                )
                i += 2 if i + 1 < len(argv) and _looks_like_value(argv[i + 1]) else 1
                continue
            if short is None:
                problems.append(f"unknown flag {token}")
                i += 1
                continue
            token = "--" + short
        if not token.startswith("--"):
            problems.append(f"unexpected argument {token!r} (flags are --NAME VALUE)")
            i += 1
            continue
        name, value = _split(token[2:])
        if f"--{name}" in hints:
            problems.append(f"--{name}: {hints['--' + name]}")
            i += 1 if value is not None or i + 1 >= len(argv) else 2
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        takes_next = value is None and nxt is not None and _looks_like_value(nxt)
        flag = table.leaves.get(name)
        negated = table.leaves.get(name[3:]) if name.startswith("no-") else None
        if flag is None and negated is not None and negated.kind == "bool" and value is None:
            out = deep_merge(out, _nest(negated.path, False))
            i += 1
            continue
        if flag is None and name.startswith("no-") and name[3:] in table.optional_groups:
            out = deep_merge(out, _nest(table.groups[name[3:]], None))
            i += 1
            continue
        if flag is None and name in table.optional_groups and not takes_next and value is None:
            out = deep_merge(out, _nest(table.groups[name], {}))
            i += 1
            continue
        if flag is None and name in table.groups:
            inside = sorted(s for s in table.leaves if s.startswith(name + "."))[:5]
            problems.append(
                f"--{name} is a group of settings, not one: set its fields"
                + (f", e.g. {', '.join('--' + s for s in inside)}" if inside else "")
                + f", or load it from a file with --{name} @ FILE.toml"
            )
            i += 2 if takes_next else 1
            continue
        if flag is None:
            parent, _, key = name.rpartition(".")
            known = [s.rpartition(".")[2] for s in table.leaves if s.startswith(parent + ".")]
            typo = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
            if parent in table.open_groups and key and not typo:
                raw = value if value is not None else nxt if takes_next else None
                if raw is None:
                    problems.append(f"--{name} needs a value")
                    i += 1
                    continue
                path = (*table.groups[parent], key.replace("-", "_"))
                out = deep_merge(out, _nest(path, _scalar(raw, None)))
                i += 1 if value is not None else 2
                continue
            problems.append(f"unknown flag --{name}{_suggest(name, table)}")
            i += 2 if takes_next else 1
            continue
        if flag.kind == "bool":
            literal = value if value is not None else nxt
            truth = {"true": True, "1": True, "false": False, "0": False}.get(
                (literal or "").lower()
            )
            if value is not None and truth is None:
                problems.append(f"--{name} takes true or false, not {value!r}")
            out = deep_merge(out, _nest(flag.path, True if truth is None else truth))
            i += 2 if value is None and truth is not None else 1
            continue
        if value is None and not takes_next:
            problems.append(f"--{name} needs a value")
            i += 1
            continue
        raw = value if value is not None else typing.cast(str, nxt)
        i += 1 if value is not None else 2
        if flag.kind in ("list", "mapping") and raw[:1] in "[{":
            try:
                parsed: Any = json.loads(raw)
            except json.JSONDecodeError as exc:
                problems.append(f"--{name}: {raw!r} is not valid JSON ({exc.msg})")
                continue
        elif flag.kind == "mapping":
            problems.append(f'--{name} takes a JSON object, e.g. --{name} \'{{"key": "value"}}\'')
            continue
        elif flag.kind == "list":
            parsed = [raw]
            if value is None:
                while (
                    i < len(argv)
                    and not argv[i].startswith("--")
                    and not (len(argv[i]) == 2 and argv[i][0] == "-" and argv[i][1] in table.shorts)
                ):
                    parsed.append(argv[i])
                    i += 1
        else:
            parsed = _scalar(raw, flag)
        out = deep_merge(out, _nest(flag.path, parsed))
    if problems:
        raise ConfigError("; ".join(problems))
    return out


def _flag_of(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int) and parts:
            parts[-1] += f"[{part}]"
        elif isinstance(part, str) and not part.startswith(("function-", "tagged-union")):
            parts.append(_kebab(part))
    return "--" + ".".join(parts) if parts else "the config"


def _validation_message(exc: ValidationError, prefix: tuple[str, ...] = ()) -> str:
    """One ``--flag: what is wrong (got VALUE)`` per error, located under ``prefix``."""
    lines = []
    for err in exc.errors():
        got = err.get("input")
        shown = "" if isinstance(got, (dict, list)) or got is None else f" (got {got!r})"
        lines.append(f"{_flag_of((*prefix, *err['loc']))}: {err['msg']}{shown}")
    return "; ".join(lines)


def _validate(cls: type[T], data: dict[str, Any], table: FlagTable) -> T:
    """``cls`` from ``data``. Each top-level block is validated as its narrowed class first:
    a class's own validator that narrows a block (the env's) reports the block's errors
    without the block's name, and the flags named in the message need it."""
    for path, block_type in table.types.items():
        block = data.get(path[0])
        if len(path) != 1 or not isinstance(block, dict):
            continue
        try:
            block_type.model_validate(block)
        except ValidationError as exc:
            raise ConfigError(_validation_message(exc, path)) from None
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc)) from None


def parse_config_argv(
    cls: type[T],
    argv: list[str],
    *,
    positional: tuple[str, ...] = ("env", "taskset", "id"),
    hints: dict[str, str] | None = None,
) -> T:
    """``cls`` from a command line: an optional leading bare word (the value at
    ``positional``, the taskset id), flags and ``@`` files. ``hints`` maps a flag this
    command line does not take to what to write instead. Raises :class:`ConfigError` naming
    every flag that is wrong."""
    rest, file_data = _files(argv)
    lead: dict[str, Any] = {}
    if rest and not rest[0].startswith("-"):
        lead = _nest(positional, rest[0])
        rest = rest[1:]
        flag = "--" + ".".join(_kebab(p) for p in positional)
        named = _ids(rest)
        for part in positional:
            named = named.get(part, {}) if isinstance(named, dict) else {}
        if named and named != lead_value(lead, positional):
            raise ConfigError(
                f"{flag} names {named!r} but the leading argument names "
                f"{lead_value(lead, positional)!r}: give one of them"
            )
    seed = deep_merge(deep_merge(file_data, lead), _ids(rest))
    table = flag_table(cls, seed)
    flags = _parse_flags(rest, table, hints or {})
    merged = deep_merge(
        _canonical(deep_merge(file_data, lead), (), table), _canonical(flags, (), table)
    )
    for path, tag in table.tags.items():
        node: Any = merged
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and "type" not in node:
            node["type"] = tag
    return _validate(cls, merged, table)


def lead_value(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        node = node[part]
    return node


def format_flags(cls: type[BaseModel], argv: list[str]) -> str:
    """One line per flag of ``cls`` (narrowed by the ids ``argv`` names), with its default."""
    rest, file_data = _files(argv)
    seed = deep_merge(file_data, _ids(rest))
    if rest and not rest[0].startswith("-"):
        seed = deep_merge(seed, {"env": {"taskset": {"id": rest[0]}}})
    table = flag_table(cls, seed)
    shorts = {v: k for k, v in table.shorts.items()}
    lines = []
    seen: set[tuple[str, ...]] = set()
    for spelling, flag in sorted(table.leaves.items(), key=lambda kv: kv[1].path):
        if flag.path in seen:
            continue
        seen.add(flag.path)
        canonical = ".".join(_kebab(p) for p in flag.path)
        short = f"-{shorts[spelling]}, " if spelling in shorts else ""
        metavar = "" if flag.kind == "bool" else " " + flag.kind.upper()
        default = flag.default
        shown = (
            ""
            if isinstance(default, BaseModel) or repr(default) == "PydanticUndefined"
            else f"  (default: {default})"
        )
        lines.append(f"  {short}--{canonical}{metavar}{shown}")
    for group in sorted(table.optional_groups):
        lines.append(f"  --{group} / --no-{group}  (optional settings group)")
    return "\n".join(lines)
