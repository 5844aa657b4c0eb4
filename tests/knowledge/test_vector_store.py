"""The vector store behind embedding.create / get / delete and knowledge.query over stored vectors."""

from __future__ import annotations

from typing import Any

from .support import BAY_SJ, HONDA, TOYOTA, App


def _data(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return list(response.json()["result"]["output"]["data"])


async def test_embedding_create_stores_the_vector_with_its_dealership_and_source_and_returns_its_id(app: App) -> None:
    source = {"uri": "crm://notes/1", "kind": "note", "metadata": {"lead_id": "L-1"}}
    payload = {"input": "Customer asked about a loaner car", "dealership_id": TOYOTA, "source": source}
    item = _data(await app.call("embedding.create", payload))[0]
    assert item["stored"] is True
    assert item["id"].startswith("vec_")
    got = await app.call("embedding.get", {"id": item["id"]})
    assert got.status_code == 200
    record = got.json()["result"]["output"]
    assert record["dealership_id"] == TOYOTA
    assert record["source"] == source
    assert record["model"] == "all-MiniLM-L6-v2-int8"
    assert record["text"] is None  # only the digest is kept unless keep_text is true
    assert record["embedding"] == item["embedding"]


async def test_storing_the_same_text_from_the_same_source_again_replaces_the_record(app: App) -> None:
    payload = {"input": "Brake pads replaced", "source": {"uri": "ro://1"}}
    first = _data(await app.call("embedding.create", payload))[0]
    again = _data(await app.call("embedding.create", payload))[0]
    assert first["id"] == again["id"]
    assert all(s["id"] != first["id"] for s in again["similar"])


async def test_embedding_create_answers_similarity_scores_of_the_companys_stored_vectors(app: App) -> None:
    texts = ["Do you offer a courtesy car during repairs?", "What are your Saturday hours?", "Tire rotation price"]
    for i, text in enumerate(texts):
        _data(await app.call("embedding.create", {"input": text, "source": {"uri": f"faq://{i}"}}))
    item = _data(await app.call("embedding.create", {"input": "Can I get a loaner vehicle while mine is serviced?"}))[0]
    similar = item["similar"]
    assert len(similar) == 3
    assert similar[0]["source"]["uri"] == "faq://0"
    assert similar[0]["similarity"] >= similar[1]["similarity"] >= similar[2]["similarity"]


async def test_knowledge_query_over_vectors_searches_the_dealerships_stored_vectors(app: App) -> None:
    await app.call(
        "embedding.create",
        {"input": "Loaner cars are free for repairs over two hours", "dealership_id": HONDA, "keep_text": True},
    )
    await app.call("embedding.create", {"input": "Toyota-only shuttle schedule", "dealership_id": TOYOTA})
    payload = {"query": "free courtesy car", "dealership_id": HONDA, "over": "vectors", "k": 5}
    response = await app.call("knowledge.query", payload)
    assert response.status_code == 200
    output = response.json()["result"]["output"]
    assert output["items"] == []
    assert [v["text"] for v in output["vectors"]] == ["Loaner cars are free for repairs over two hours"]
    assert all(v["dealership_id"] == HONDA for v in output["vectors"])


async def test_another_company_never_sees_reads_or_deletes_a_companys_vectors(app: App) -> None:
    text = "Secret pricing note for the motor group"
    mine = _data(await app.call("embedding.create", {"input": text, "keep_text": True}))[0]
    theirs = _data(await app.call("embedding.create", {"input": text}, key="bay"))[0]
    assert theirs["id"] != mine["id"]
    assert all(s["id"] != mine["id"] for s in theirs["similar"])
    for action in ("embedding.get", "embedding.delete"):
        response = await app.call(action, {"id": mine["id"]}, key="bay")
        assert response.status_code == 404
        assert response.json()["status"]["error"]["code"] == "knowledge.vector_not_found"
    assert (await app.call("embedding.get", {"id": mine["id"]})).status_code == 200


async def test_a_key_bound_to_one_rooftop_cannot_read_another_rooftops_vector(app: App) -> None:
    honda = _data(await app.call("embedding.create", {"input": "Honda note", "dealership_id": HONDA}))[0]
    response = await app.call("embedding.get", {"id": honda["id"]}, key="crm_toyota")
    assert response.status_code == 404
    assert response.json()["status"]["error"]["code"] == "knowledge.vector_not_found"


async def test_embedding_delete_removes_the_vector_from_reads_and_searches(app: App) -> None:
    item = _data(await app.call("embedding.create", {"input": "Quokka day is Tuesday"}))[0]
    deleted = await app.call("embedding.delete", {"id": item["id"]})
    assert deleted.status_code == 200
    assert deleted.json()["result"]["output"] == {"id": item["id"], "deleted": True}
    assert (await app.call("embedding.get", {"id": item["id"]})).status_code == 404
    again = _data(await app.call("embedding.create", {"input": "Quokka day is Tuesday", "store": False}))[0]
    assert again["stored"] is False
    assert all(s["id"] != item["id"] for s in again["similar"])


async def test_storing_vectors_needs_the_knowledge_write_scope(app: App) -> None:
    response = await app.call("embedding.create", {"input": "hi"}, key="crm_inventory_only")
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.insufficient_scope"


async def test_embedding_create_at_another_companys_dealership_is_denied(app: App) -> None:
    response = await app.call("embedding.create", {"input": "hi", "dealership_id": BAY_SJ})
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.tenancy_denied"
