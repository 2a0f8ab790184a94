"""The branching message graph (prepare_turn / commit), semantic edges and the trace store."""

from __future__ import annotations

from pathlib import Path

import pytest

import verifiers.v1 as vf
from verifiers.v1 import graph
from verifiers.v1.configs.agent import resolve_agent
from verifiers.v1.semantic import extract_acp_info
from verifiers.v1.utils.trace_store import read_episodes, write_episode


def _trace() -> vf.Trace:
    return vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="Task", data=vf.TaskData(idx=0, prompt="q")),
    )


def _reply(
    text: str, prompt: list[int], completion: list[int], spans: list[tuple[int, int] | None]
) -> vf.Response:
    return vf.Response(
        id=text,
        created=0,
        model="m",
        message=vf.AssistantMessage(content=text),
        finish_reason="stop",
        tokens=vf.TurnTokens(
            prompt_ids=prompt,
            completion_ids=completion,
            completion_logprobs=[-0.5] * len(completion),
            message_spans=spans,
        ),
    )


def test_turns_reuse_the_stored_prefix_and_fork_where_the_prompt_is_rewritten() -> None:
    trace = _trace()
    system, user = vf.SystemMessage(content="s"), vf.UserMessage(content="u1")
    first = graph.prepare_turn(trace, [system, user])
    assert first.prefix_node_ids == [] and first.tail == [system, user]
    a1 = first.commit(_reply("a1", [1, 2, 3, 4, 9], [5, 6], [(0, 2), (2, 4)]))
    # the generation prompt (9) goes on the reply, ahead of its sampled tokens
    assert [n.token_ids for n in trace.nodes] == [[1, 2], [3, 4], [9, 5, 6]]
    assert trace.nodes[a1].mask == [False, True, True]

    u2 = vf.UserMessage(content="u2")
    turn = graph.prepare_turn(trace, [system, user, trace.nodes[a1].message, u2])
    assert turn.prefix_node_ids == [0, 1, a1]
    turn.commit(_reply("a2", [1, 2, 3, 4, 9, 5, 6, 7, 9], [8], [(0, 2), (2, 4), None, (7, 8)]))
    assert trace.num_branches == 1
    (branch,) = trace.branches
    assert branch.token_ids == [1, 2, 3, 4, 9, 5, 6, 7, 9, 8]
    assert branch.sampled_mask == [False] * 5 + [True, True, False, False, True]

    # a compacted history shares only the system prompt: a second branch
    summary = vf.UserMessage(content="summary")
    graph.prepare_turn(trace, [system, summary]).commit(
        _reply("a3", [1, 2, 10, 9], [11], [(0, 2), (2, 3)])
    )
    assert trace.num_branches == 2
    assert [b.token_ids for b in trace.branches] == [
        [1, 2, 3, 4, 9, 5, 6, 7, 9, 8],
        [1, 2, 10, 9, 11],
    ]
    assert [m.content for m in trace.assistant_messages] == ["a1", "a2", "a3"]


def test_a_bridged_prompt_must_extend_the_stored_tokens() -> None:
    trace = _trace()
    user = vf.UserMessage(content="u")
    reply = graph.prepare_turn(trace, [user]).commit(_reply("a", [1, 2], [3], [(0, 1)]))
    turn = graph.prepare_turn(
        trace, [user, trace.nodes[reply].message, vf.UserMessage(content="v")]
    )
    assert turn.previous_renderer_token_ids() == ([1, 2], [3])
    bad = _reply("b", [1, 7, 3, 4], [5], [None, None, (3, 4)])
    assert bad.tokens is not None
    bad.tokens.bridged = True
    with pytest.raises(ValueError, match="exactly extend"):
        turn.commit(bad)
    assert len(trace.nodes) == 2  # nothing was added


def test_semantic_edges_attach_to_request_nodes_idempotently_and_atomically() -> None:
    trace = _trace()
    user = vf.UserMessage(content="u")
    first = graph.prepare_turn(trace, [user]).commit(_reply("a", [1], [2], [(0, 1)]))
    second = graph.prepare_turn(trace, [vf.UserMessage(content="w")]).commit(
        _reply("b", [3], [4], [(0, 1)])
    )
    trace.calls = [
        vf.ModelCall(node=first, acp=vf.ACPInfo(request_id="r1")),
        vf.ModelCall(node=second, acp=vf.ACPInfo(request_id="r2")),
    ]
    edge = vf.SemanticEdge(source_request_id="r1", target_request_id="r2", type="continuation")
    missing = vf.SemanticEdge(source_request_id="r1", target_request_id="r9", type="x")
    with pytest.raises(ValueError, match="no committed message node"):
        trace.add_semantic_edges(vf.SemanticEdgeSet(edges=[edge, missing]))
    assert all(not n.semantic_parents for n in trace.nodes)
    for _ in range(2):
        trace.add_semantic_edges(vf.SemanticEdgeSet(edges=[edge]))
    assert trace.nodes[second].semantic_parents == [vf.ParentLink(node=first, type="continuation")]
    restored = vf.WireTrace.model_validate_json(trace.model_dump_json())
    assert restored.nodes[second].semantic_parents == trace.nodes[second].semantic_parents
    assert restored.calls[1].acp == vf.ACPInfo(request_id="r2")
    with pytest.raises(ValueError, match="duplicate semantic edge"):
        vf.SemanticEdgeSet(edges=[edge, edge])
    with pytest.raises(ValueError, match="itself"):
        vf.SemanticEdge(source_request_id="r1", target_request_id="r1", type="x")


def test_a_compaction_attempt_trains_only_once_resumed() -> None:
    trace = _trace()
    work = graph.prepare_turn(trace, [vf.UserMessage(content="work")]).commit(
        _reply("w", [1], [2], [(0, 1)])
    )
    attempt = graph.prepare_turn(trace, [vf.UserMessage(content="summarize")]).commit(
        _reply("s", [3], [4], [(0, 1)])
    )
    resumed = graph.prepare_turn(trace, [vf.UserMessage(content="resume")]).commit(
        _reply("r", [5], [6], [(0, 1)])
    )
    trace.calls = [
        vf.ModelCall(node=n, acp=vf.ACPInfo(request_id=rid))
        for n, rid in ((work, "work"), (attempt, "attempt"), (resumed, "resumed"))
    ]
    tried = vf.SemanticEdge(
        source_request_id="work", target_request_id="attempt", type="compaction_attempt"
    )
    trace.add_semantic_edges(vf.SemanticEdgeSet(edges=[tried]))
    assert [b.trainable for b in trace.branches] == [True, False, True]
    used = vf.SemanticEdge(
        source_request_id="attempt", target_request_id="resumed", type="compaction"
    )
    trace.add_semantic_edges(vf.SemanticEdgeSet(edges=[tried, used]))
    assert [b.trainable for b in trace.branches] == [True, True, True]


def test_acp_request_headers_are_read_and_not_forwarded() -> None:
    info, forwarded = extract_acp_info({"x-acp-model-request-id": "req-1", "Accept": "x"})
    assert info == vf.ACPInfo(request_id="req-1") and forwarded == {"Accept": "x"}
    assert extract_acp_info({"Accept": "x"}) == (None, {"Accept": "x"})
    with pytest.raises(ValueError, match="not a valid ACP request ID"):
        extract_acp_info({"X-ACP-Model-Request-ID": "a b"})


def test_trace_store_round_trips_episodes_with_the_resolved_sampling(tmp_path: Path) -> None:
    seat = vf.AgentConfig(
        sampling=vf.SamplingConfig.model_validate({"temperature": None, "top_k": 5})
    )
    resolved = resolve_agent(seat, sampling=vf.SamplingConfig(temperature=0.7, max_tokens=9))
    assert resolved.sampling is not None
    assert resolved.sampling.as_args() == {"max_tokens": 9, "top_k": 5}
    trace = vf.Trace(
        agent=vf.AgentInfo(config=resolved),
        task=vf.TraceTask(type="Task", data=vf.TaskData(idx=1, prompt="q")),
    )
    trace.record_reward("r", 1.0)
    write_episode(tmp_path, vf.Episode(task=trace.task, traces=[trace], ok=True))
    write_episode(tmp_path, vf.Episode(task=trace.task, traces=[trace], ok=False))
    episodes = read_episodes(tmp_path)
    assert [e.ok for e in episodes] == [True, False]
    back = episodes[0].traces[0]
    assert back.id == trace.id and back.reward == 1.0
    assert back.agent.config.sampling is not None
    assert back.agent.config.sampling.temperature is None  # the seat's clear survives
    assert back.agent.config.sampling.as_args() == resolved.sampling.as_args()


def test_prepare_turn_sees_nodes_added_or_replaced_outside_the_graph() -> None:
    trace = _trace()
    user, reply = vf.UserMessage(content="u"), vf.AssistantMessage(content="a")
    trace.append(user)
    trace.append(reply, sampled=True)
    assert graph.prepare_turn(trace, [user, reply]).prefix_node_ids == [0, 1]
    # a new node list (a record read back, a rebuilt trace) is indexed afresh
    trace.nodes = [graph.MessageNode(message=vf.UserMessage(content="other"))]
    assert graph.prepare_turn(trace, [user, reply]).prefix_node_ids == []
    assert graph.prepare_turn(trace, [vf.UserMessage(content="other")]).prefix_node_ids == [0]


def test_a_recorded_prompt_reuses_existing_nodes_and_only_extends_the_newest_one_fresh() -> None:
    trace = _trace()
    system, user = vf.SystemMessage(content="s"), vf.UserMessage(content="u")
    graph.prepare_turn(trace, [system, user]).commit_prompt()
    assert [(n.parent, n.message) for n in trace.nodes] == [(None, system), (0, user)]
    # the same opening again walks the stored nodes (through the graph's index): nothing added
    graph.prepare_turn(trace, [system, user]).commit_prompt()
    assert len(trace.nodes) == 2
    # a prompt that leaves the stored path at the root's child reuses the root, forks there
    other = vf.UserMessage(content="other")
    turn = graph.prepare_turn(trace, [system, other])
    turn.commit_prompt()
    assert [(n.parent, n.message) for n in trace.nodes][2:] == [(0, other)]
    # a turn continuing the newest branch adds each message after the newest node, even one
    # equal to a message stored elsewhere in the graph
    graph.continue_branch(trace, [user, user]).commit_prompt()
    assert [(n.parent, n.message) for n in trace.nodes][3:] == [(2, user), (3, user)]
    assert trace.messages == [system, other, user, user]
    # the index built later still sees every node
    assert graph.prepare_turn(trace, [system, other, user, user]).prefix_node_ids == [0, 2, 3, 4]
