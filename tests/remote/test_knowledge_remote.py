"""The knowledge family on a remote adapter host: ingestion and retrieval run on the host as the caller the gateway
authenticated (an administrator's ingest, a member's rooftops), and natural-language inventory search makes its
inventory calls back through the gateway, where they are authorized and audited."""

from __future__ import annotations

from forecourt.adapters.remote import RemoteAdapter

from .support import MOTOR, TOYOTA, remote_pair

DOCUMENT = {
    "source": "policies/pets.md",
    "content": "# Pets\n\n## Can I bring my dog to the showroom?\nLeashed, friendly dogs are welcome.",
    "kind": "policy",
}


async def test_an_administrator_ingests_on_the_knowledge_host_and_a_member_retrieves_it(template, tmp_path):
    with remote_pair(template, tmp_path, "knowledge") as pair:
        assert isinstance(pair.gateway.services.catalogue.adapter_for_id("knowledge"), RemoteAdapter)
        ingest = {"company_id": MOTOR, "dealership_id": TOYOTA, "documents": [DOCUMENT]}
        created = await pair.result("admin.knowledge.ingest", ingest, key="admin")
        assert created["items"][0]["status"] == "created"
        refused = await pair.rest("admin.knowledge.ingest", ingest, key="crm")  # refused in the gateway
        assert (refused.status_code, refused.json()["status"]["error"]["code"]) == (403, "auth.insufficient_scope")
        found = await pair.result("knowledge.query", {"query": "can my dog come along", "dealership_id": TOYOTA})
        assert found["items"][0]["source"]["uri"].endswith("policies/pets.md")
        assert pair.host.host.calls == 2


async def test_inventory_search_in_words_on_the_host_searches_through_the_gateway_as_the_caller(template, tmp_path):
    with remote_pair(template, tmp_path, "knowledge") as pair:
        response = await pair.rest("knowledge.search_inventory", {"query": "a used car", "dealership_id": TOYOTA})
        assert response.status_code == 200, response.text
        output = response.json()["result"]["output"]
        assert output["items"]
        assert output["total"] >= len(output["items"])
        records = await pair.audit(response.json()["audit"]["trace"], count=3)
        assert [(r.action, r.surface, r.member_id) for r in records] == [
            ("inventory.facets", "workflow", "crm-agent"),
            ("inventory.search", "workflow", "crm-agent"),
            ("knowledge.search_inventory", "rest", "crm-agent"),
        ]


async def test_a_nested_search_the_companys_policy_denies_fails_the_call_with_the_gateways_code(template, tmp_path):
    with remote_pair(template, tmp_path, "knowledge") as pair:
        policy = {"id": "no-search", "company_id": MOTOR, "denied_actions": ["inventory.search"]}
        await pair.result("admin.policies.upsert", {"company_id": MOTOR, "policy": policy}, key="admin")
        response = await pair.rest("knowledge.search_inventory", {"query": "a used car", "dealership_id": TOYOTA})
        assert (response.status_code, response.json()["status"]["error"]["code"]) == (403, "policy.denied")
        assert pair.host.host.calls == 1  # the call ran there; its search was refused here
