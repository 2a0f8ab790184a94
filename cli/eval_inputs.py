"""What a classic ``vf eval`` run starts from: the environment ``ENV_ID`` names (installed,
a package directory, or installed from the hub on request) and the model client ``-m`` names
(an alias in the endpoints registry, a model behind ``-b``, or the built-in oracle; with
``--ray``, the client factory each Ray worker builds its own client from).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError
from cli.eval_flags import EvalOptions

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VAR = "OPENAI_API_KEY"


def load_env(env_id: str, env_kwargs: dict[str, Any], install: bool) -> Any:
    """The environment for ``ENV_ID``: an installed id, or a package directory (not installed).

    ``OWNER/NAME`` that is not installed is installed from the configured hub when ``install``
    is set, or after a yes on a terminal.
    """
    import verifiers as vf
    from verifiers.loading import load_environment_from_directory

    if Path(env_id).is_dir():
        return load_environment_from_directory(env_id, **env_kwargs)
    try:
        return vf.load_environment(env_id, **env_kwargs)
    except vf.EnvironmentNotFoundError as e:
        if "/" not in env_id:
            raise
        if not (install or _confirm_install(env_id)):
            raise CLIError(
                str(e), hint="or add --install to install it from the hub now", exit_code=2
            ) from None
    from cli import env_cmd

    env_cmd.install(spec=env_id, no_deps=False)
    import importlib

    importlib.invalidate_caches()
    return vf.load_environment(env_id, **env_kwargs)


def _confirm_install(env_id: str) -> bool:
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    from verifiers.hub.config import HubSettings

    return bool(
        typer.confirm(
            f"{env_id} is not installed; install it from {HubSettings.load().url}?",
            default=True,
            err=True,
        )
    )


def resolve_endpoint(
    model: str, base_url: str | None, key_var: str | None, endpoints_path: str | None
) -> Any:
    """The :class:`verifiers.EndpointConfig` for ``-m`` from the registry or the flags."""
    from verifiers.clients.endpoints import EndpointConfig, load_endpoints

    named_var = key_var or os.environ.get("VF_API_KEY_VAR")
    if named_var and os.environ.get(named_var) is None:
        source = "-k" if key_var else "VF_API_KEY_VAR"
        raise CLIError(
            f"the API key variable ${named_var} (named by {source}) is not set",
            hint=f"export {named_var}=..., or name the variable that holds the key",
            exit_code=2,
        )
    default_registry = Path("configs/endpoints.toml")
    registry = endpoints_path or (str(default_registry) if default_registry.is_file() else None)
    aliases: list[str] = []
    if registry:
        if not Path(registry).is_file():
            raise CLIError(
                f"endpoints file {registry} does not exist",
                hint="configs/endpoints.toml in the repository shows the format",
                exit_code=2,
            )
        endpoints = load_endpoints(registry)
        if model in endpoints:
            ep = endpoints[model]
            if key_var:
                import dataclasses

                ep = dataclasses.replace(ep, api_key_var=key_var)
            elif ep.api_key_var and os.environ.get(ep.api_key_var) is None:
                raise CLIError(
                    f"alias {model!r} in {registry} takes its API key from "
                    f"${ep.api_key_var}, which is not set",
                    hint=f"export {ep.api_key_var}=..., pass -k VAR_NAME to read the key from "
                    "another variable, or remove api_key_var from the alias if its server "
                    "needs no key",
                    exit_code=2,
                )
            return ep
        aliases = sorted(endpoints)
        if endpoints_path and not base_url:
            raise CLIError(
                f"{model!r} is not an alias in {registry} (aliases: {', '.join(aliases) or 'none'})",
                hint="pick one of them with -m, or pass -b URL to use it as a model name",
                exit_code=2,
            )
    url = base_url or os.environ.get("VF_BASE_URL") or DEFAULT_BASE_URL
    var = named_var or DEFAULT_KEY_VAR
    if os.environ.get(var) is None and url == DEFAULT_BASE_URL:
        known = (
            f"{model!r} is not an alias in {registry} ({', '.join(aliases)}), and "
            if aliases
            else ""
        )
        raise CLIError(
            f"{known}no API key for {url}: ${var} is not set",
            hint=f"export {var}=..., pass -k VAR_NAME, point -b at your own endpoint, or use -m oracle",
            exit_code=2,
        )
    # the default variable is implicit: unset, a self-hosted server gets no key (a variable
    # named by -k or VF_API_KEY_VAR was checked above)
    if os.environ.get(var) is None:
        return EndpointConfig(model=model, base_urls=[url], api_key_var=None, alias=model)
    return EndpointConfig(model=model, base_urls=[url], api_key_var=var, alias=model)


def model_client(o: EvalOptions, cached: bool = False) -> tuple[Any, str | None, str]:
    """(client, endpoint URLs for the metadata, model name) for ``-m``. A wrong URL fails
    now, not after a run of retries; with the response cache (``cached``) an endpoint that
    does not answer is only a warning, as the answers may all be cached: it is checked again
    at the first model call, and :func:`endpoint_failure` names it if that call failed."""
    import functools

    import verifiers as vf
    from verifiers.errors import EndpointError

    if o.model == "oracle":
        return vf.OracleClient(), None, "oracle"
    ep = resolve_endpoint(o.model, o.api_base_url, o.api_key_var, o.endpoints_path)
    from verifiers.clients.probe import probe_endpoint

    down: list[int] = []
    for i, url in enumerate(ep.base_urls):
        try:
            probe_endpoint(url, ep.api_key())
        except EndpointError as e:
            if not cached:
                raise
            down.append(i)
            print(
                f"warning: {e}\nwarning: going on with the response cache (--cache): the run "
                "fails at the first answer that is not cached",
                file=sys.stderr,
            )
    retry = vf.RetryPolicy(max_retries=o.max_retries)
    client = ep.pool(timeout=o.timeout, retry=retry, client_type=o.api_client_type)
    if down:
        from verifiers.response_cache import EndpointCheckedClient

        for i in down:
            check = functools.partial(probe_endpoint, ep.base_urls[i], ep.api_key())
            client.clients[i] = EndpointCheckedClient(client.clients[i], check)
    return client, ",".join(ep.base_urls), ep.model


def endpoint_failure(client: Any) -> CLIError | None:
    """The error of an endpoint that was down when a cached run needed a model call (see
    :func:`model_client`), as the up-front check would have reported it."""
    from verifiers.response_cache import EndpointCheckedClient

    for c in getattr(client, "clients", ()):
        if isinstance(c, EndpointCheckedClient) and c.error is not None:
            return CLIError(
                str(c.error),
                hint="the answers that were cached were used; start the server, then run "
                "the command again to make the model calls that are missing",
                exit_code=1,
            )
    return None


def ray_executor(o: EvalOptions, env_kwargs: dict[str, Any]) -> Any:
    """The executor that runs the groups on the Ray cluster at ``--ray``: each worker builds
    its own client (the oracle, or the endpoint's pool; the API key variable goes with it)."""
    import functools

    import verifiers as vf
    from verifiers.distributed import EnvSpec, RayConfig, RayExecutor, oracle_client
    from verifiers.distributed.pool import ray_available

    if not ray_available():
        raise CLIError(
            "--ray needs Ray, which is not installed",
            hint="pip install 'verifiers[ray]'",
            exit_code=2,
        )
    factory: Any = oracle_client
    env_vars: dict[str, str] = {}
    if o.model != "oracle":
        ep = resolve_endpoint(o.model, o.api_base_url, o.api_key_var, o.endpoints_path)
        retry = vf.RetryPolicy(max_retries=o.max_retries)
        factory = functools.partial(
            ep.pool, timeout=o.timeout, retry=retry, client_type=o.api_client_type
        )
        if ep.api_key_var and os.environ.get(ep.api_key_var) is not None:
            env_vars[ep.api_key_var] = os.environ[ep.api_key_var]
    assert o.ray_address is not None
    config = RayConfig(
        address=o.ray_address,
        num_workers=o.ray_workers,
        sandbox=o.ray_sandbox,
        env_vars=env_vars,
    )
    return RayExecutor(EnvSpec.of(o.env_id, env_kwargs), config, factory)
