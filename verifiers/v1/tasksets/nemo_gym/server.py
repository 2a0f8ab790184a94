# /// script
# requires-python = ">=3.12,<3.14"
# dependencies = ["nemo-gym==0.4.0"]
# ///
"""Run one resource server of the ``nemo-gym`` package on this machine's loopback.

``$NEMO_GYM_RESOURCE_SERVER`` names it (``module:Class``). The port it listens on is written to
``nemo_gym.port`` in the working directory once the socket is bound; the server then serves
until it is terminated."""

import os
import socket
from importlib import import_module
from pathlib import Path

import uvicorn
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.server_utils import ServerClient
from omegaconf import OmegaConf

LOOPBACK = "127.0.0.1"


def build(entrypoint: str, port: int):  # type: ignore[no-untyped-def]
    module_name, _, class_name = entrypoint.partition(":")
    cls = getattr(import_module(module_name), class_name)
    config_type = cls.model_fields["config"].annotation
    parts = module_name.split(".")
    label = parts[-2] if len(parts) > 1 else module_name
    # no head server runs: the client is required by the class but never reached
    client = ServerClient(
        head_server_config=BaseServerConfig(host=LOOPBACK, port=11000),
        global_config_dict=OmegaConf.create({}),
    )
    config = config_type(name=label, host=LOOPBACK, port=port, entrypoint="app.py")
    return cls(config=config, server_client=client)


def main() -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK, 0))
    port = listener.getsockname()[1]
    server = build(os.environ["NEMO_GYM_RESOURCE_SERVER"], port)
    app = server.setup_webserver()
    server.setup_liveness(app)
    server.setup_exception_middleware(app)
    Path("nemo_gym.port").write_text(str(port), encoding="ascii")
    uvicorn.Server(uvicorn.Config(app, host=LOOPBACK, port=port)).run(sockets=[listener])


if __name__ == "__main__":
    main()
