"""Model runtimes (seed 001 §5): Vertex AI, NVIDIA Triton / NIM, OpenAI-compatible servers, and ``model.invoke``.

Wiring (``bootstrap.build_services``)::

    closers = register_model_actions(catalogue, adapter_configs.defaults, gateway)
    services.closers.extend(closers)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from forecourt.actions.base import Catalogue
from forecourt.adapters.models.actions import MODEL_ACTIONS, MODELS_SCOPE
from forecourt.adapters.models.common import (
    ModelChunk,
    ModelNotFound,
    ModelRequest,
    ModelRequestRejected,
    RuntimeNotConfigured,
    UpstreamForbidden,
    parse_request,
    upstream_error,
)
from forecourt.adapters.models.nvidia import NvidiaAdapter
from forecourt.adapters.models.openai_compat import OpenAICompatAdapter
from forecourt.adapters.models.routing import AgentPreferences, ModelRoute, ModelRouter, RoutePlanner
from forecourt.adapters.models.vertex import VertexAdapter
from forecourt.errors import UpstreamCredentialRejected

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

__all__ = [
    "MODELS_SCOPE",
    "MODEL_ACTIONS",
    "AgentPreferences",
    "ModelChunk",
    "ModelNotFound",
    "ModelRequest",
    "ModelRequestRejected",
    "ModelRoute",
    "ModelRouter",
    "NvidiaAdapter",
    "OpenAICompatAdapter",
    "RoutePlanner",
    "RuntimeNotConfigured",
    "UpstreamCredentialRejected",
    "UpstreamForbidden",
    "VertexAdapter",
    "parse_request",
    "register_model_actions",
    "upstream_error",
]


def register_model_actions(
    catalogue: Catalogue,
    defaults: Mapping[str, Mapping[str, Any]],
    gateway: Gateway | Callable[[], Gateway],
) -> list[Callable[[], Awaitable[None]]]:
    """Add the model actions and their adapters to ``catalogue``.

    Args:
        catalogue: The action catalogue.
        defaults: The operator's adapter configurations (``adapters.config.load_adapter_defaults``).
        gateway: The gateway that runs ``model.invoke``'s routed calls (or a function returning it).

    Returns:
        Functions that close the adapters' HTTP clients (for ``Services.closers``).
    """
    for action in MODEL_ACTIONS:
        catalogue.add(action)
    vertex = VertexAdapter(defaults.get("vertex"))
    nvidia = NvidiaAdapter(defaults.get("nvidia"))
    openai = OpenAICompatAdapter(defaults.get("openai"))
    for adapter in (vertex, nvidia, openai):
        catalogue.add_adapter(adapter)
    catalogue.add_adapter(ModelRouter(gateway))
    return [vertex.aclose, nvidia.aclose, openai.aclose]
