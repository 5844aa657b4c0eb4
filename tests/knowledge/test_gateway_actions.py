"""The knowledge actions through the real app: REST envelope, policy, tenancy, admin API."""

from __future__ import annotations

import math

from .support import BAY_SJ, HONDA, TOYOTA, App


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


async def test_embedding_create_answers_one_vector_for_a_string_through_the_rest_envelope(app: App) -> None:
    response = await app.call("embedding.create", {"input": "Do you have loaner cars?"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"]["code"] == 200
    result = body["result"]
    assert result["type"] == "model.embedding"
    assert result["metadata"]["model"] == "all-MiniLM-L6-v2-int8"
    assert result["metadata"]["dimensions"] == 384
    assert result["metadata"]["tokens"] > 0
    data = result["output"]["data"]
    assert len(data) == 1
    assert len(data[0]["embedding"]) == 384
    assert abs(_norm(data[0]["embedding"]) - 1.0) < 1e-3
    assert data[0]["id"].startswith("vec_")


async def test_embedding_create_answers_one_vector_per_item_in_input_order_for_a_list(app: App) -> None:
    texts = ["oil change", "powertrain warranty", "oil change"]
    response = await app.call("embedding.create", {"input": texts})
    data = response.json()["result"]["output"]["data"]
    assert [d["index"] for d in data] == [0, 1, 2]
    assert data[0]["embedding"] == data[2]["embedding"]
    assert data[0]["id"] == data[2]["id"] != data[1]["id"]


async def test_embeddings_are_cached_per_company_and_reported_as_cached(app: App) -> None:
    first = (await app.call("embedding.create", {"input": ["a brand new question about tires"]})).json()
    again = (await app.call("embedding.create", {"input": ["a brand new question about tires"]})).json()
    other_company = (
        await app.call("embedding.create", {"input": ["a brand new question about tires"]}, key="bay")
    ).json()
    assert first["result"]["output"]["data"][0]["cached"] is False
    assert again["result"]["output"]["data"][0]["cached"] is True
    assert again["result"]["metadata"]["cached"] == 1
    # Another company never reuses this company's cache entry.
    assert other_company["result"]["output"]["data"][0]["cached"] is False
    assert (
        other_company["result"]["output"]["data"][0]["embedding"] == first["result"]["output"]["data"][0]["embedding"]
    )


async def test_embedding_create_with_k_returns_similar_dealer_chunks_with_scores(app: App) -> None:
    payload = {"input": "courtesy car while my car is repaired", "dealership_id": TOYOTA, "k": 3}
    data = (await app.call("embedding.create", payload)).json()["result"]["output"]["data"]
    matches = data[0]["matches"]
    assert len(matches) == 3
    assert matches[0]["similarity"] >= matches[1]["similarity"] >= matches[2]["similarity"]
    assert all(m["document_id"].startswith("doc_") for m in matches)


async def test_embedding_create_refuses_neighbours_at_another_companys_dealership(app: App) -> None:
    response = await app.call("embedding.create", {"input": "hours", "dealership_id": BAY_SJ, "k": 2})
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.tenancy_denied"


async def test_embedding_create_with_an_unknown_model_is_a_clear_error(app: App) -> None:
    response = await app.call("embedding.create", {"input": "hi", "model": "text-embedding-9"})
    assert response.status_code == 422
    assert response.json()["status"]["error"]["code"] == "knowledge.embedder_unavailable"


async def test_knowledge_query_returns_the_answering_faq_chunk_with_source_metadata(app: App) -> None:
    payload = {"query": "Can I get a courtesy car while mine is in the shop?", "dealership_id": HONDA, "k": 3}
    response = await app.call("knowledge.query", payload)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["type"] == "knowledge.results"
    first = result["output"]["items"][0]
    assert first["heading"].endswith("Do you offer loaner cars or a shuttle?")
    assert first["source"]["uri"] == "forecourt:docs/service-faq.md"
    assert first["source"]["kind"] == "faq"
    assert "Honda" in first["text"] or "loaner" in first["text"]
    assert result["output"]["retrieval"] == {"mode": "hybrid", "model": "all-MiniLM-L6-v2-int8"}


async def test_knowledge_query_answers_with_the_dealerships_own_details(app: App) -> None:
    payload = {"query": "what is your service department phone number", "dealership_id": HONDA, "k": 3}
    items = (await app.call("knowledge.query", payload)).json()["result"]["output"]["items"]
    assert any("+15105550101" in item["text"] for item in items)


async def test_knowledge_query_filters_by_document_kind(app: App) -> None:
    payload = {"query": "warranty", "dealership_id": TOYOTA, "k": 5, "filters": {"kind": ["warranty"]}}
    items = (await app.call("knowledge.query", payload)).json()["result"]["output"]["items"]
    assert items
    assert {i["source"]["kind"] for i in items} == {"warranty"}


async def test_knowledge_query_at_another_companys_dealership_is_denied(app: App) -> None:
    response = await app.call("knowledge.query", {"query": "hours", "dealership_id": TOYOTA}, key="bay")
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.tenancy_denied"


async def test_a_key_without_the_knowledge_scope_cannot_query_knowledge(app: App) -> None:
    response = await app.call("knowledge.query", {"query": "hours", "dealership_id": TOYOTA}, key="crm_inventory_only")
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.insufficient_scope"


async def test_search_inventory_in_words_derives_filters_and_ranks_matching_vehicles(app: App) -> None:
    payload = {"query": "three-row SUV under 60k with low miles", "dealership_id": TOYOTA}
    response = await app.call("knowledge.search_inventory", payload)
    assert response.status_code == 200
    output = response.json()["result"]["output"]
    assert output["filters"]["body"] == ["suv"]
    assert output["filters"]["price_max"] == 6_000_000
    assert "Highlander" in output["filters"]["model"] or "Grand Highlander" in output["filters"]["model"]
    for vehicle in output["items"]:
        assert vehicle["model"] in ("Highlander", "Grand Highlander", "Sequoia", "Land Cruiser")
        assert vehicle["price"]["amount_minor"] <= 6_000_000
    scores = [v["score"] for v in output["items"]]
    assert scores == sorted(scores, reverse=True)


async def test_search_inventory_needs_the_inventory_scope_for_the_search_it_makes(app: App) -> None:
    response = await app.call("knowledge.search_inventory", {"query": "red sedan", "dealership_id": TOYOTA}, key="bay")
    assert response.status_code == 403


async def test_admin_ingests_lists_and_deletes_documents_through_the_admin_api(app: App) -> None:
    document = {
        "source": "policies/pets.md",
        "content": "# Pets\n\n## Can I bring my dog to the showroom?\nLeashed, friendly dogs are welcome.",
        "kind": "policy",
    }
    created = await app.admin("POST", f"/dealerships/{TOYOTA}/documents", {"documents": [document]})
    assert created.status_code == 200, created.text
    item = created.json()["items"][0]
    assert item["status"] == "created"
    again = await app.admin("POST", f"/dealerships/{TOYOTA}/documents", {"documents": [document]})
    assert again.json()["items"][0]["status"] == "unchanged"
    found = (await app.call("knowledge.query", {"query": "can my dog come along", "dealership_id": TOYOTA})).json()
    assert found["result"]["output"]["items"][0]["document_id"] == item["document_id"]
    listed = (await app.admin("GET", f"/dealerships/{TOYOTA}/documents")).json()["items"]
    assert item["document_id"] in {d["document_id"] for d in listed}
    deleted = await app.admin("DELETE", f"/dealerships/{TOYOTA}/documents/{item['document_id']}")
    assert deleted.status_code == 200
    after = (await app.call("knowledge.query", {"query": "dog showroom leashed", "dealership_id": TOYOTA})).json()
    assert item["document_id"] not in {i["document_id"] for i in after["result"]["output"]["items"]}
    missing = await app.admin("DELETE", f"/dealerships/{TOYOTA}/documents/{item['document_id']}")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "knowledge.document_not_found"


async def test_only_admins_may_ingest_documents(app: App) -> None:
    body = {"documents": [{"source": "x.md", "content": "# X\ntext"}]}
    response = await app.admin("POST", f"/dealerships/{TOYOTA}/documents", body, key="crm")
    assert response.status_code == 403
