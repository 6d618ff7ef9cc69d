"""Write docs/concepts/assistant-judge-transcript.md: the judging loop over the real MCP server, as it went.

    python scripts/judging_transcript.py [--data ../shared/training/check_covid_dev.jsonl] [--output PATH]

Run from the repository root against a Neo4j (NEO4J_URI, ...). A small task is built from three Check-COVID dev
claims and their abstracts (the shipped trained stance network draws the offline edges, as in
``python -m benchmarks.judge_queue``), then the official MCP SDK client, connected in process to Lyra's MCP server,
takes batches with ``next_judgments`` and answers them with ``submit_judgments`` until the queue is empty. The
answers come from the benchmark's simulated assistant (the data's gold labels, no mistakes), not a model: the point
is the exchange. Each request's arguments and each response's structured content are written as they were, with
long strings cut (the cut is marked); the task is removed afterwards. Regenerate rather than edit the page.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.judge_queue import (  # the repository root went on the path first
    DEFAULT_DATA,
    URL_PREFIX,
    Built,
    SimulatedAssistant,
    build_task,
    choose_claims,
    offline_verdicts,
    read_pairs,
)
from lyra.bootstrap import Services
from lyra.cli.common import open_services, settings_from_env
from lyra.ml.factory import Models, judge_settings
from lyra.models.graph import offline_judge_name

TASK = "transcript_judging"
OUTPUT = Path("docs/concepts/assistant-judge-transcript.md")
CUT = 160  # characters kept of a long string


def trim(value: Any) -> Any:
    """Long strings cut to CUT characters, the cut marked with how much was left out."""
    if isinstance(value, str) and len(value) > CUT:
        return f"{value[:CUT]}… [{len(value) - CUT} more characters]"
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trim(v) for v in value]
    return value


def build(services: Services, data: Path, prefix: str) -> Built:
    pairs = choose_claims(read_pairs(data), 3, seed=11)
    passages = sorted({p.passage for p in pairs})
    page_list = services.evidence.upsert_pages(
        [{"url": f"{prefix}{i}", "title": p.title or None, "domain_category": "academic"} for i, p in enumerate(pairs)]
    ).ids
    page_ids = {p.passage: page_list[i] for i, p in enumerate(pairs)}
    fragment_list = services.evidence.upsert_fragments(
        [{"page_id": page_ids[t], "text": t, "position": 0} for t in passages]
    ).ids
    settings, experiment = judge_settings(services.settings, "trained")
    models = Models(settings, experiment=experiment)
    verdicts = offline_verdicts(pairs, models)
    return build_task(
        services,
        TASK,
        pairs,
        page_ids,
        dict(zip(passages, fragment_list, strict=True)),
        verdicts,
        offline_judge_name(models.nli.model_id),
    )


def exchange(services: Services, built: Built) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The calls, in order: (tool, arguments, structured response)."""
    from mcp import Client
    from mcp.types import Implementation

    from lyra.mcp.server import create_mcp_server

    assistant = SimulatedAssistant({built.pair_ids[k]: v for k, v in built.gold.items()}, 0.0, 0.9, seed=0)
    server = create_mcp_server(services.operations)
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    async def run() -> None:
        info = Implementation(name="transcript-assistant", version="1.0")
        async with Client(server, client_info=info) as client:

            async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name} failed: {result.content}")
                body = dict(result.structured_content or {})
                calls.append((name, arguments, body))
                return body

            for _ in range(5):
                batch = await call("next_judgments", {"task_id": TASK, "limit": 2, "policy": "impact"})
                if not batch["items"]:
                    break
                where = {
                    str(r["id"]): (str(r["claim_id"]), str(r["fragment_id"]))
                    for r in services.store.run(
                        "judging/tickets_by_ids", {"ids": [i["ticket"] for i in batch["items"]]}
                    )
                }
                answers = [
                    assistant.verdict(i["ticket"], built.pair_ids[where[i["ticket"]]]).model_dump(exclude_none=True)
                    for i in batch["items"]
                ]
                await call("submit_judgments", {"task_id": TASK, "items": answers})

    anyio.run(run)
    return calls


def render(calls: list[tuple[str, dict[str, Any], dict[str, Any]]], data: Path) -> str:
    lines = [
        "# The judging loop: a transcript",
        "",
        "<!-- generated by scripts/judging_transcript.py; regenerate, do not edit -->",
        "",
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `python scripts/judging_transcript.py`: the official "
        "MCP SDK client (`mcp.Client`, declaring itself `transcript-assistant` 1.0) connected in process to Lyra's "
        "MCP server (`lyra.mcp.server.create_mcp_server`, the same server `lyra mcp` runs), over a real Neo4j. The "
        f"task holds three claims of `{data.name}` (Check-COVID dev), each with the abstract it was checked against; "
        "the shipped stance network (network only) drew the offline edges. The verdicts are the data's gold labels "
        "sent by a script standing in for the assistant (the benchmark's simulated assistant, no mistakes), not "
        "by a model. Each call shows the tool's arguments (`tools/call` params) and the structured content of its "
        f"result; the JSON-RPC envelope is left out, and strings longer than {CUT} characters are cut where marked. "
        "Tickets and fence delimiters are fresh random values on every run.",
        "",
        "See [The assistant as a judge](assistant-judge.md) for the rules the server applies.",
        "",
    ]
    for number, (name, arguments, body) in enumerate(calls, 1):
        lines += [
            f"## {number}. `{name}`",
            "",
            "Request:",
            "",
            "```json",
            json.dumps({"name": name, "arguments": trim(arguments)}, indent=2, ensure_ascii=False),
            "```",
            "",
            "Response:",
            "",
            "```json",
            json.dumps(trim(body), indent=2, ensure_ascii=False),
            "```",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    with open_services(settings_from_env()) as services:
        if services.task_repo.exists(TASK):
            services.cleanup.cleanup(TASK, "soft")
        prefix = f"{URL_PREFIX}transcript/"
        try:
            calls = exchange(services, build(services, args.data, prefix))
        finally:
            if services.task_repo.exists(TASK):
                services.cleanup.cleanup(TASK, "soft")
            services.store.run(
                "cleanup/delete_pages_by_url_prefix",
                {"prefix": prefix, "batch_size": services.settings.graph.cleanup_batch_size},
            )
    args.output.write_text(render(calls, args.data), encoding="utf-8")
    print(f"wrote {args.output} ({len(calls)} calls)", file=sys.stderr)


if __name__ == "__main__":
    main()
