"""Model runtimes (seed 001 §5, §13): Vertex AI, NVIDIA Triton / NIM, OpenAI-compatible servers, Anthropic, Hugging
Face Inference Endpoints / TGI, and ``model.invoke``'s router. The actions are described (and registered with these
adapters) in :mod:`forecourt.actions.models`.
"""

from __future__ import annotations

from forecourt.adapters.errors import ModelNotFound, ModelRequestRejected, RuntimeNotConfigured, UpstreamForbidden
from forecourt.adapters.models.anthropic_messages import AnthropicAdapter
from forecourt.adapters.models.common import ModelChunk, ModelRequest, parse_request, upstream_error
from forecourt.adapters.models.huggingface import HuggingFaceAdapter
from forecourt.adapters.models.nvidia import NvidiaAdapter
from forecourt.adapters.models.openai_compat import OpenAICompatAdapter
from forecourt.adapters.models.routing import AgentPreferences, ModelRoute, ModelRouter, RoutePlanner
from forecourt.adapters.models.vertex import VertexAdapter
from forecourt.errors import UpstreamCredentialRejected

__all__ = [
    "AgentPreferences",
    "AnthropicAdapter",
    "HuggingFaceAdapter",
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
    "upstream_error",
]
