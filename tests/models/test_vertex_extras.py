"""vertex.predict, conversation memory (sessions) and batch prediction jobs against the loopback Vertex fake."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from forecourt.adapters.models.session_memory import MemorySessions, RedisSessions, SessionMemory
from forecourt.delivery.model_jobs import ModelJobPoller, channel
from forecourt.errors import ForecourtError
from forecourt.gateway.base import Invocation, Principal

from .support import MOTOR, Rig, adapter_files, error_of, start_rig

BATCH = {
    "model": "projects/demo-project/locations/us-central1/models/42",
    "display_name": "weekly trade-in prices",
    "input_uris": ["gs://demo-bucket/in/appraisals.jsonl"],
    "output_uri_prefix": "gs://demo-bucket/out",
}


async def _turn(rig: Rig, text: str, session: str = "conv-1", **extra: Any) -> Any:
    body = {
        "id": "mcp-req:turn",
        "caller": {"sessionId": session},
        "action": {"type": "model.invoke", "name": "vertex.invokeModel", "version": "v1"},
        "payload": {"model": "gemini-1.5-pro", "input": text, "memory": True, **extra},
    }
    headers = {"Authorization": f"Bearer {rig.keys['crm']}"}
    response = await rig.client.post("/mcp/vertex.invokeModel", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def _sent_texts(fakes: Any) -> list[tuple[str, str]]:
    contents = fakes.vertex.requests[-1].body["contents"]
    return [(c["role"], c["parts"][0]["text"]) for c in contents]


async def test_predict_calls_the_deployed_endpoint_and_answers_a_model_prediction(rig, fakes):
    instances = [{"vin": "1HGCV1F34LA000001", "mileage": 42000}, {"vin": "JTDKN3DU0A0000002", "mileage": 90000}]
    response = await rig.rest("vertex.predict", {"endpoint": "1234567890", "instances": instances})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["type"] == "model.prediction"
    assert [p["instance"] for p in result["output"]["predictions"]] == instances
    assert result["output"]["deployed_model_id"] == "7001"
    assert result["metadata"]["model"] == "trade-in-pricer"
    assert fakes.vertex.extras.predictions == [{"endpoint": "1234567890", "instances": instances}]


async def test_predict_on_an_unknown_endpoint_is_model_not_found(rig, fakes):
    response = await rig.rest("vertex.predict", {"endpoint": "missing-endpoint", "instances": [{"a": 1}]})
    assert error_of(response)["code"] == "models.model_not_found"


async def test_a_session_keeps_the_conversation_so_each_call_sends_only_its_new_turn(rig, fakes):
    first = await _turn(rig, "Is the RAV4 in stock?")
    assert first["metadata"]["session"] == {"id": "conv-1", "turns": 2}
    await _turn(rig, "What colour is it?")
    third = await _turn(rig, "Can I test drive it Saturday?")
    reply = fakes.vertex.reply
    assert _sent_texts(fakes) == [
        ("user", "Is the RAV4 in stock?"),
        ("model", reply),
        ("user", "What colour is it?"),
        ("model", reply),
        ("user", "Can I test drive it Saturday?"),
    ]
    assert third["metadata"]["session"]["turns"] == 6
    kept = await rig.rest("vertex.sessions.get", {"session_id": "conv-1"})
    assert [t["content"] for t in kept.json()["result"]["output"]["turns"]][::2] == [
        "Is the RAV4 in stock?",
        "What colour is it?",
        "Can I test drive it Saturday?",
    ]


async def test_erasing_a_session_forgets_it_at_once(rig, fakes):
    await _turn(rig, "My phone is 415-555-0100")
    erased = await rig.rest("vertex.sessions.delete", {"session_id": "conv-1"})
    assert erased.json()["result"]["output"] == {"session_id": "conv-1", "deleted": True}
    await _turn(rig, "Hello again")
    assert _sent_texts(fakes) == [("user", "Hello again")]


async def test_sessions_are_per_company(rig, fakes):
    await _turn(rig, "Is the RAV4 in stock?")
    other = Principal(method="internal", company_id="demo-bay-autos", member_id=None, subject="operator")
    seen = await rig.gateway.invoke(
        Invocation(action="vertex.sessions.get", payload={"session_id": "conv-1"}, principal=other)
    )
    assert seen.output["turns"] == []


async def test_a_session_keeps_only_its_newest_turns(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": MOTOR, "adapter_id": "vertex", "config": {"sessions": {"max_turns": 4}}},
    )
    for text in ("one", "two", "three"):
        last = await _turn(rig, text)
    assert last["metadata"]["session"]["turns"] == 4
    kept = (await rig.invoke("vertex.sessions.get", {"session_id": "conv-1"})).output["turns"]
    assert [t["content"] for t in kept if t["role"] == "user"] == ["two", "three"]


async def test_a_session_expires_after_its_time_to_live(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": MOTOR, "adapter_id": "vertex", "config": {"sessions": {"ttl_s": 0.05}}},
    )
    await _turn(rig, "Is the RAV4 in stock?")
    deadline = time.monotonic() + 5
    while (await rig.invoke("vertex.sessions.get", {"session_id": "conv-1"})).output["turns"]:
        assert time.monotonic() < deadline  # bounded wait for the 50 ms expiry
        await asyncio.sleep(0.02)


async def test_memory_without_a_session_id_is_invalid_params(rig, fakes):
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("vertex.invokeModel", {"model": "gemini-1.5-pro", "input": "hi", "memory": True})
    assert info.value.code == "invalid_params"
    assert fakes.vertex.requests == []


async def test_a_batch_prediction_job_is_submitted_polled_to_its_end_and_announced(rig, fakes):
    job = (await rig.invoke("vertex.batchPredict.create", BATCH)).output
    assert (job["status"], job["remote_status"]) == ("pending", "JOB_STATE_PENDING")
    assert job["remote_id"] == "projects/demo-project/locations/us-central1/batchPredictionJobs/9000"
    sent = fakes.vertex.extras.jobs["9000"]
    assert sent["inputConfig"] == {"instancesFormat": "jsonl", "gcsSource": {"uris": BATCH["input_uris"]}}
    poller = ModelJobPoller(rig.gateway, rig.services.backends.events)
    later = rig.gateway.clock() + timedelta(hours=1)
    async with rig.services.backends.events.subscribe(channel(MOTOR)) as events:
        assert [await poller.tick(later) for _ in range(3)] == [(1, 0), (1, 1), (0, 0)]
        message = json.loads(await asyncio.wait_for(anext(events), timeout=5))
    assert message["job"]["status"] == "succeeded"
    assert message["job"]["result"]["output"] == {"gcsOutputDirectory": "gs://demo-bucket/out/prediction-1"}
    listed = (await rig.invoke("vertex.batchPredict.list", {})).output
    assert [j["job_id"] for j in listed["items"]] == [job["job_id"]]


async def test_cancelling_a_batch_job_follows_vertex_to_cancelled(rig, fakes):
    job_id = (await rig.invoke("vertex.batchPredict.create", BATCH)).output["job_id"]
    cancelling = (await rig.invoke("vertex.batchPredict.cancel", {"job_id": job_id})).output
    assert cancelling["status"] == "cancelled"  # CANCELLING, then CANCELLED on the next read


async def test_a_refused_batch_job_is_not_stored(rig, fakes):
    fakes.vertex.extras.fail_next_batch = True
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("vertex.batchPredict.create", BATCH)
    assert info.value.code == "models.request_rejected"
    assert (await rig.invoke("vertex.batchPredict.list", {})).output["items"] == []


@pytest.fixture(params=["memory", "redis"])
async def sessions(request: pytest.FixtureRequest) -> AsyncIterator[SessionMemory]:
    """Each session store (Redis under this test's own key prefix)."""
    if request.param == "memory":
        yield MemorySessions()
        return
    from forecourt.redis_client import connect_redis

    made = RedisSessions(
        connect_redis(request.getfixturevalue("redis_url")), request.getfixturevalue("redis_prefix"), owns_client=True
    )
    yield made
    await made.aclose()


async def test_a_session_store_keeps_the_newest_turns_and_erases_on_request(sessions):
    turns = [{"role": "user", "content": str(i)} for i in range(5)]
    await sessions.append("c:s", turns[:3], max_turns=4, ttl_s=60)
    await sessions.append("c:s", turns[3:], max_turns=4, ttl_s=60)
    assert [t["content"] for t in await sessions.load("c:s")] == ["1", "2", "3", "4"]
    assert await sessions.load("c:other") == []
    assert await sessions.delete("c:s") is True
    assert await sessions.load("c:s") == []
    assert await sessions.delete("c:s") is False


async def test_a_session_continues_on_another_replica_sharing_redis(template, fakes, tmp_path, redis_url, redis_prefix):
    config_dir = adapter_files(tmp_path / "adapters", fakes)
    replicas = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        replicas.append(
            await start_rig(
                template[0], template[1], tmp_path / name, config_dir, redis_url=redis_url, redis_prefix=redis_prefix
            )
        )
    try:
        await _turn(replicas[0], "Is the RAV4 in stock?")
        await _turn(replicas[1], "What colour is it?")
        assert [t for t in _sent_texts(fakes) if t[0] == "user"] == [
            ("user", "Is the RAV4 in stock?"),
            ("user", "What colour is it?"),
        ]
    finally:
        for replica in replicas:
            await replica.client.aclose()
            await replica.services.audit.flush()
            await replica.services.close()
