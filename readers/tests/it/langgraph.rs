//! LangGraph's own graph JSON, lowered to `qls-graph/1`: the real `to_json()` snapshots in
//! `fixtures/langgraph-examples/`, the swarm a real langgraph-swarm app draws, and the shapes the
//! reader must refuse with a line.

use ir::catalogue::Catalogue;
use ir::graph::{EdgeKind, Graph, NodeKind};
use readers::catalogue::read_catalogue;
use readers::langgraph::{looks_like, read, Options};
use std::path::Path;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/langgraph-examples")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn corpus(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn cat(text: &str) -> Catalogue {
    read_catalogue("c.yaml", text).unwrap()
}

fn models(ids: &[&str]) -> Options {
    Options {
        model_nodes: ids.iter().map(|s| s.to_string()).collect(),
        ..Options::default()
    }
}

fn edge(g: &Graph, from: &str, to: &str) -> Option<EdgeKind> {
    g.edges
        .iter()
        .find(|e| e.from == from && e.to.as_deref() == Some(to))
        .map(|e| e.kind)
}

fn kind(g: &Graph, id: &str) -> NodeKind {
    g.node(id).unwrap_or_else(|| panic!("no node {id}")).kind
}

#[test]
fn create_react_agent_lowers_to_model_tools_end() {
    let text = fixture("create_react_agent.to_json.json");
    assert!(looks_like(&text));
    let l = read(
        "g.json",
        &text,
        &cat(&fixture("tools.catalogue.yaml")),
        &models(&["agent"]),
    )
    .unwrap();
    let g = &l.graph;
    assert_eq!(g.entry, "agent");
    assert_eq!(kind(g, "agent"), NodeKind::Model);
    assert_eq!(kind(g, "tools"), NodeKind::Tools);
    assert_eq!(g.node("tools").unwrap().guarded, Some(false));
    // No `metadata.__tools` in this older snapshot: every catalogue tool, and a note says so.
    assert_eq!(
        g.node("tools").unwrap().tools,
        vec!["search_api".to_string()]
    );
    assert!(
        l.notes.iter().any(|n| n.contains("every catalogue tool")),
        "{:?}",
        l.notes
    );
    assert_eq!(edge(g, "agent", "tools"), Some(EdgeKind::Call));
    assert_eq!(edge(g, "tools", "agent"), Some(EdgeKind::Return));
    assert_eq!(edge(g, "agent", "end"), Some(EdgeKind::Reply));
    assert_eq!(g.edges.len(), 3);
    assert!(g.agents_derived);
    assert_eq!(g.agents.keys().collect::<Vec<_>>(), vec!["agent"]);
    // Lines point into LangGraph's file: the `tools` node object starts on line 29.
    assert_eq!(g.node("tools").unwrap().at.as_ref().unwrap().line, 29);
}

#[test]
fn without_model_nodes_every_node_is_custom_and_said_so() {
    let text = fixture("conditional_state_graph.to_json.json");
    let l = read("g.json", &text, &cat("tools: {}\n"), &Options::default()).unwrap();
    assert_eq!(kind(&l.graph, "agent"), NodeKind::Custom);
    assert_eq!(kind(&l.graph, "tools"), NodeKind::Custom);
    assert_eq!(
        l.notes.iter().filter(|n| n.contains("custom node")).count(),
        2
    );
}

#[test]
fn tools_node_flag_names_a_plain_function_tools_node_and_its_tools() {
    let text = fixture("conditional_state_graph.to_json.json");
    let mut o = models(&["agent"]);
    o.tools_nodes
        .insert("tools".into(), vec!["search_api".into()]);
    let c = cat("tools:\n  search_api: {effect: read}\n  other: {effect: write}\n");
    let l = read("g.json", &text, &c, &o).unwrap();
    assert_eq!(kind(&l.graph, "tools"), NodeKind::Tools);
    assert_eq!(
        l.graph.node("tools").unwrap().tools,
        vec!["search_api".to_string()]
    );
}

#[test]
fn swarm_hands_off_from_the_tools_node_and_interrupt_makes_a_human_node() {
    let text = corpus("langgraph-json-swarm/graph.json");
    let c = cat(&corpus("langgraph-json-swarm/tools.catalogue.yaml"));
    let l = read(
        "g.json",
        &text,
        &c,
        &models(&["flight_assistant:agent", "hotel_assistant:agent"]),
    )
    .unwrap();
    let g = &l.graph;
    // Subgraph prefixes are agents; `metadata.__tools` lists each ToolNode's tools.
    assert_eq!(
        g.node("flight_assistant:tools").unwrap().agent.as_deref(),
        Some("flight_assistant")
    );
    // A ToolNode runs every call of the model's message in one super-step (SPEC §3 Batches).
    for n in g.nodes.iter().filter(|n| n.kind == NodeKind::Tools) {
        assert!(n.is_batch(), "{} is not marked batch", n.id);
    }
    assert!(g
        .nodes
        .iter()
        .all(|n| n.kind == NodeKind::Tools || n.batch.is_none()));
    assert_eq!(
        g.node("hotel_assistant:tools").unwrap().tools,
        vec![
            "search_hotels",
            "book_hotel",
            "transfer_to_flight_assistant"
        ]
    );
    // The swarm's active-agent router fans out from `__start__` by code.
    assert_eq!(g.entry, "__start__");
    assert_eq!(kind(g, "__start__"), NodeKind::Custom);
    assert_eq!(
        edge(g, "__start__", "hotel_assistant:agent"),
        Some(EdgeKind::Handoff)
    );
    // `transfer_to_…` hands off from the tools node.
    assert_eq!(
        edge(g, "hotel_assistant:tools", "flight_assistant:agent"),
        Some(EdgeKind::Handoff)
    );
    // A subgraph end whose ways out are all conditional may end the run.
    assert_eq!(
        edge(g, "hotel_assistant:agent", "end"),
        Some(EdgeKind::Reply)
    );
    // interrupt_before on the flight tools: the model's call goes to the human node, which
    // approves on to the tools or rejects back to the model.
    let h = "interrupt_before:flight_assistant:tools";
    assert_eq!(kind(g, h), NodeKind::Human);
    assert_eq!(edge(g, "flight_assistant:agent", h), Some(EdgeKind::Call));
    assert_eq!(
        edge(g, "flight_assistant:agent", "flight_assistant:tools"),
        None
    );
    assert_eq!(edge(g, h, "flight_assistant:tools"), Some(EdgeKind::Route));
    assert_eq!(edge(g, h, "flight_assistant:agent"), Some(EdgeKind::Route));
}

#[test]
fn supervisor_workers_return_to_the_supervisor_and_never_end_the_run_themselves() {
    // The shape langgraph-supervisor draws with xray: workers' ends go back to the supervisor
    // by a plain edge; the supervisor's end leads on by its hand-off tools.
    let text = r#"{"nodes": [
 {"id": "__start__"}, {"id": "__end__"},
 {"id": "supervisor:__start__"}, {"id": "supervisor:agent"},
 {"id": "supervisor:tools", "data": {"id": ["langgraph", "prebuilt", "tool_node", "ToolNode"]}, "metadata": {"__tools": ["transfer_to_w"]}},
 {"id": "supervisor:__end__"},
 {"id": "w:__start__"}, {"id": "w:agent"},
 {"id": "w:tools", "data": {"id": ["langgraph", "prebuilt", "tool_node", "ToolNode"]}, "metadata": {"__tools": ["book"]}},
 {"id": "w:__end__"}],
 "edges": [
 {"source": "__start__", "target": "supervisor:__start__"},
 {"source": "w:__end__", "target": "supervisor:__start__"},
 {"source": "supervisor:__end__", "target": "__end__", "conditional": true},
 {"source": "supervisor:__end__", "target": "w:__start__", "conditional": true},
 {"source": "supervisor:__start__", "target": "supervisor:agent"},
 {"source": "supervisor:agent", "target": "supervisor:__end__", "conditional": true},
 {"source": "supervisor:agent", "target": "supervisor:tools", "conditional": true},
 {"source": "supervisor:tools", "target": "supervisor:agent"},
 {"source": "w:__start__", "target": "w:agent"},
 {"source": "w:agent", "target": "w:__end__", "conditional": true},
 {"source": "w:agent", "target": "w:tools", "conditional": true},
 {"source": "w:tools", "target": "w:agent"}]}"#;
    let c = cat("tools:\n  transfer_to_w: {effect: read}\n  book: {effect: write}\n");
    let g = read(
        "g.json",
        text,
        &c,
        &models(&["supervisor:agent", "w:agent"]),
    )
    .unwrap()
    .graph;
    assert_eq!(g.entry, "supervisor:agent");
    assert_eq!(
        edge(&g, "supervisor:tools", "w:agent"),
        Some(EdgeKind::Handoff)
    );
    assert_eq!(
        edge(&g, "w:agent", "supervisor:agent"),
        Some(EdgeKind::Handoff)
    );
    assert_eq!(edge(&g, "supervisor:agent", "end"), Some(EdgeKind::Reply));
    assert_eq!(
        edge(&g, "w:agent", "end"),
        None,
        "a worker's end has a plain way on"
    );
}

#[test]
fn send_fan_out_leaves_a_dynamic_edge_without_targets() {
    let text = corpus("langgraph-json-send-fanout/graph.json");
    let l = read("g.json", &text, &cat("tools: {}\n"), &Options::default()).unwrap();
    let d: Vec<_> = l
        .graph
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::Dynamic)
        .collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].from, "plan");
    assert!(d[0].to.is_none() && d[0].targets.is_none());
    assert!(
        l.notes.iter().any(|n| n.contains("`worker`")),
        "{:?}",
        l.notes
    );
}

#[test]
fn interrupt_after_puts_the_human_node_on_the_way_out() {
    let text = r#"{"nodes": [{"id": "__start__"}, {"id": "m", "metadata": {"__interrupt": "after"}}, {"id": "__end__"}],
 "edges": [{"source": "__start__", "target": "m"}, {"source": "m", "target": "__end__"}]}"#;
    let g = read("g.json", text, &cat("tools: {}\n"), &models(&["m"]))
        .unwrap()
        .graph;
    let h = "interrupt_after:m";
    assert_eq!(edge(&g, "m", h), Some(EdgeKind::Call));
    assert_eq!(edge(&g, h, "end"), Some(EdgeKind::Reply));
    assert_eq!(edge(&g, h, "m"), Some(EdgeKind::Route));
    assert_eq!(edge(&g, "m", "end"), None);
}

#[test]
fn bad_shapes_are_refused_at_their_line() {
    let c = cat("tools: {}\n");
    let cases: &[(&str, Options, u32, &str)] = &[
        (
            "{\"nodes\": [{\"id\": \"__start__\"},\n {\"id\": \"a\"}],\n \"edges\": [{\"source\": \"__start__\",\n  \"target\": \"b\"}]}",
            Options::default(),
            4,
            "`b`",
        ),
        (
            "{\"nodes\": [{\"id\": \"__start__\"},\n {\"id\": \"a\", \"metadata\": {\n  \"__interrupt\": \"during\"}}],\n \"edges\": []}",
            Options::default(),
            3,
            "during",
        ),
        (
            "{\"nodes\": [{\"id\": \"a\"}],\n \"edges\": [{\"source\": \"a\", \"target\": \"a\"}]}",
            Options::default(),
            1,
            "no `__start__`",
        ),
        (
            "{\"nodes\": [{\"id\": \"__start__\"},\n {\"id\": \"agent\"}],\n \"edges\": [{\"source\": \"__start__\", \"target\": \"agent\"}]}",
            models(&["agnet"]),
            1,
            "did you mean `agent`",
        ),
        (
            "{\"nodes\": [{\"id\": \"__start__\"},\n {\"id\": \"a\"},\n {\"id\": \"a\"}],\n \"edges\": []}",
            Options::default(),
            3,
            "twice",
        ),
    ];
    for (text, o, line, word) in cases {
        let e = read("g.json", text, &c, o).unwrap_err();
        assert_eq!(e.line, *line, "{e}");
        assert!(e.message.contains(word), "{e}");
    }
}

#[test]
fn a_qls_graph_is_not_taken_for_langgraph() {
    assert!(!looks_like(
        r#"{"format": "qls-graph/1", "entry": "a", "nodes": [{"id": "__start__"}], "edges": []}"#
    ));
    assert!(!looks_like("not json"));
    assert!(looks_like(
        r#"{"nodes": [{"id": "x"}], "edges": [{"source": "x", "target": "x"}]}"#
    ));
}

#[test]
fn tools_node_flag_parses_name_and_tools() {
    assert_eq!(
        Options::parse_tools_node("tools=a, b").unwrap(),
        ("tools".to_string(), vec!["a".to_string(), "b".to_string()])
    );
    assert!(Options::parse_tools_node("tools").is_err());
    assert!(Options::parse_tools_node("tools=").is_err());
}

#[test]
fn a_transfer_tool_hands_off_from_its_tools_node_even_when_undrawn() {
    // A flat graph: the ToolNode's `transfer_to_billing` returns `Command(goto="billing")`, which
    // LangGraph does not draw.
    let text = r#"{"nodes": [{"id": "__start__"}, {"id": "desk"},
 {"id": "tools", "data": {"id": ["langgraph", "prebuilt", "tool_node", "ToolNode"]}, "metadata": {"__tools": ["transfer_to_billing"]}},
 {"id": "billing"}, {"id": "__end__"}],
 "edges": [{"source": "__start__", "target": "desk"}, {"source": "desk", "target": "tools", "conditional": true},
 {"source": "desk", "target": "__end__", "conditional": true}, {"source": "tools", "target": "desk"},
 {"source": "billing", "target": "__end__"}]}"#;
    let c = cat("tools:\n  transfer_to_billing: {effect: read}\n");
    let l = read("g.json", text, &c, &models(&["desk", "billing"])).unwrap();
    assert!(edge(&l.graph, "tools", "billing").is_some());
    // Reached now, so no dynamic edge is needed.
    assert!(l.graph.edges.iter().all(|e| e.kind != EdgeKind::Dynamic));
}

#[test]
fn a_start_or_end_cannot_be_named_a_model() {
    let text = fixture("create_react_agent.to_json.json");
    let e = read("g.json", &text, &cat("tools: {}\n"), &models(&["__end__"])).unwrap_err();
    assert!(e.message.contains("start or an end"), "{e}");
}
