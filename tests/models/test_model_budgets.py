"""A member's model budget: tokens and spend priced from the runtime adapter's configuration, then refused."""

from __future__ import annotations

from pathlib import Path

from forecourt.domain.protections import Budget, Budgets, Protections
from forecourt.domain.tenancy import Policy

from .conftest import running_rig
from .support import Fakes, adapter_files, error_of

MOTOR = "demo-motor-group"
# The fake counts words as tokens; at these prices a call costs 1 minor unit per token in and 2 per token out (~27).
PRICING = {"llama*": {"input_per_million_minor": 1_000_000, "output_per_million_minor": 2_000_000}}


async def test_a_members_model_spend_is_priced_from_the_adapter_and_refused_once_spent(
    template: tuple[Path, dict[str, str]], fakes: Fakes, tmp_path: Path
) -> None:
    config_dir = adapter_files(tmp_path / "adapters", fakes, openai={"pricing": PRICING})
    async with running_rig(template, config_dir, tmp_path) as rig:
        policy = Policy(
            id="budgets", company_id=MOTOR, protections=Protections(budgets=Budgets(member=Budget(spend_minor=40)))
        )
        async with rig.services.store.transaction() as uow:
            await uow.tenancy.upsert_policy(policy)
        rig.gateway.tenancy.invalidate()
        first = await rig.rest("openai.invokeModel", {"input": "Hello"})
        second = await rig.rest("openai.invokeModel", {"input": "Hello"})
        third = await rig.rest("openai.invokeModel", {"input": "Hello"})
        usage = await rig.gateway.protect.budgets.usage(MOTOR, [("member", "crm-agent")], [policy])
    assert (first.status_code, second.status_code) == (200, 200)
    assert third.status_code == 429
    assert error_of(third)["code"] == "budget.exceeded"
    assert error_of(third)["details"]["meter"] == "spend_minor"
    used = usage[0]["used"]
    assert used["tokens_out"] == 2 * len(fakes.openai.reply.split())
    assert used["spend_minor"] == used["tokens_in"] + 2 * used["tokens_out"] > 40
