# Type stub only: at run time ``verifiers.clients.client`` (0.3.x's path of the classic client
# base class) is the module verifiers.classic.client, served by verifiers.classic.aliases; the
# core package has no such module. This stub lets code importing the 0.3.x path type-check.
from typing import Any

from verifiers.classic.client import Client as Client
from verifiers.classic.client import ClientT as ClientT
from verifiers.classic.client import MessagesT as MessagesT
from verifiers.classic.client import ResponseT as ResponseT
from verifiers.classic.client import ToolT as ToolT
from verifiers.classic.client import _as_tool as _as_tool
from verifiers.classic.client import auth_errors as auth_errors
from verifiers.classic.client import to_classic_response as to_classic_response
from verifiers.classic.client import to_model_response as to_model_response

AUTH_ERRORS: tuple[type[Exception], ...]

def __getattr__(name: str) -> Any: ...
