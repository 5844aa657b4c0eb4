"""Errors raised by Forecourt's outbound integrations (model runtimes with their shared GPU slots and session
memory, upstream MCP servers, knowledge, the outbound AAP client, adapter configuration). Every one derives from
:class:`forecourt.errors.ForecourtError`; see that module for the whole tree and the wire forms.
"""

from __future__ import annotations

from typing import Any

from forecourt.errors import ForecourtError, InvalidParams, NotFound, UpstreamError

# raised in forecourt.adapters.aap.client


class AapCallError(ForecourtError):
    """A call to another dealer agent failed; ``payload`` is its ``aap.error`` (or a synthetic one for transport
    failures). Raised by the outbound AAP client and checker, never to a Forecourt caller."""

    code = "aap.call_failed"
    http_status = 502
    jsonrpc_code = -32000

    def __init__(self, code: str, message: str, *, payload: dict[str, Any] | None = None, http_status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.payload = payload or {}
        self.http_status = http_status


# raised in forecourt.adapters.config


class AdapterConfigError(InvalidParams, ValueError):
    """An adapter configuration file is unreadable or invalid (raised at start-up, never to a client)."""

    code = "adapters.invalid_config"
    default_message = "The adapter configuration is invalid."


# raised in forecourt.adapters.knowledge.adapter


class DocumentNotFound(NotFound):
    """No such knowledge document at this dealership."""

    code = "knowledge.document_not_found"
    default_message = "Document not found."


# raised in forecourt.adapters.knowledge.embedders


class EmbedderUnavailable(ForecourtError):
    """The requested embedding model is not installed or not configured here."""

    code = "knowledge.embedder_unavailable"
    http_status = 422
    jsonrpc_code = -32602
    default_message = "This embedding model is not available."


# raised in forecourt.adapters.knowledge.vector_store


class VectorNotFound(NotFound):
    """No stored vector with this id in the caller's company (or at a dealership the caller may read)."""

    code = "knowledge.vector_not_found"
    default_message = "Vector not found."


# raised in forecourt.adapters.a2a_peers


class PeerNotConfigured(NotFound):
    """The company's adapter configuration names no such peer agent."""

    code = "agents.peer_not_configured"
    default_message = "No such peer agent is configured."


class PeerUnavailable(ForecourtError):
    """The peer agent could not be reached or refused the call."""

    code = "agents.peer_unavailable"
    http_status = 502
    jsonrpc_code = -32000
    retryable = True
    default_message = "The peer agent could not be reached or refused the call."


# raised in forecourt.adapters.models.common


class UpstreamForbidden(UpstreamError):
    """The runtime says the gateway's identity may not use this model or project (HTTP 403)."""

    code = "upstream.forbidden"
    http_status = 502
    default_message = "The model runtime refused access to this model."


class ModelNotFound(NotFound):
    """The runtime does not serve the model (HTTP 404)."""

    code = "models.model_not_found"
    default_message = "The model runtime does not serve this model."


class ModelRequestRejected(InvalidParams):
    """The runtime found the request invalid (HTTP 400/422): e.g. a parameter out of the model's range."""

    code = "models.request_rejected"
    default_message = "The model runtime rejected the request."


class RuntimeNotConfigured(ForecourtError):
    """The runtime lacks required configuration (project, endpoint) or a company endpoint is not allowed."""

    code = "models.runtime_not_configured"
    http_status = 503
    jsonrpc_code = -32000
    default_message = "This model runtime is not configured."


# raised in forecourt.adapters.upstream.pool


class UpstreamProtocolError(UpstreamError):
    """The upstream answered a request with a JSON-RPC error; its code is in ``details.upstream_code``."""

    code = "upstream.protocol_error"
    http_status = 502
    jsonrpc_code = -32000
    default_message = "The upstream MCP server refused the request."


# raised in forecourt.adapters.models (Triton versions, GPU quotas, model jobs)


class NoReadyVersion(ForecourtError):
    """The model has no version the server reports ready (loading, unloading, or failed)."""

    code = "models.no_ready_version"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "No version of this model is ready."


class GpuQuotaExceeded(ForecourtError):
    """The company already uses all its GPU slots of this kind."""

    code = "gpu.quota_exceeded"
    http_status = 429
    jsonrpc_code = -32000
    retryable = True
    default_message = "The company's GPU quota is in use; retry when a slot frees up."


class JobNotFound(NotFound):
    """No job with this id belongs to the calling company."""

    code = "models.job_not_found"
    default_message = "No such job."


# raised in forecourt.adapters.models.slots and .session_memory


class SlotsUnavailable(ForecourtError):
    """The shared slot counter (Redis) cannot be reached: GPU work is not admitted blind."""

    code = "gpu.quota_unavailable"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "GPU quotas cannot be checked right now."


class SessionsUnavailable(ForecourtError):
    """The shared session store (Redis) cannot be reached."""

    code = "models.sessions_unavailable"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "Conversation memory is not available right now."


# raised in forecourt.cli.adapter_host (remote adapter hosts)


class HostUnauthorized(ForecourtError):
    """A remote adapter host refused the gateway's service token."""

    code = "adapters.host_unauthorized"
    http_status = 401
    default_message = "The adapter host refused this gateway's service credential."
