//! Real tool lists collected from public repositories (`tests/fixtures/tool-lists/README.md` says
//! where each comes from): every one is read, its tools counted against a count made
//! independently when it was collected, its format recognised by structure, and its export in
//! qls's own format read back to the same tools.

use ir::catalogue::Catalogue;
use ir::testkit::meaning;
use readers::catalogue::read_catalogue;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool-lists")
}

/// The format a list is read as, by the words its note uses (`Result`: an MCP `tools/list`
/// result, which the MCP reader reads without a note on its format).
#[derive(Clone, Copy, Debug)]
enum Format {
    Result,
    McpArray,
    Docker,
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Declarations,
    Gemini,
}

impl Format {
    fn words(self) -> Option<&'static str> {
        match self {
            Format::Result => None,
            Format::McpArray => Some("read as MCP `Tool` objects"),
            Format::Docker => Some("read as Docker's MCP catalog tools"),
            Format::Anthropic => Some("read as Anthropic Messages tools"),
            Format::OpenAiChat => Some("read as OpenAI chat-completions tools"),
            Format::OpenAiResponses => Some("read as OpenAI Responses tools"),
            Format::Declarations => Some("read as function declarations"),
            Format::Gemini => Some("read as Gemini tools"),
        }
    }
}

use Format::*;

/// Every fixture, its tool count (counted with Python's `json` when collected: the array's
/// length, the `tools` list's, the non-blank lines of a JSON Lines file, the declarations of
/// every Gemini tool) and the format it must be read as.
const LISTS: &[(&str, usize, Format)] = &[
    (
        "anthropic-cookbook-customer-service-agent.tools.json",
        3,
        Anthropic,
    ),
    ("anthropic-cookbook-sms-chatbot.tools.json", 2, Anthropic),
    ("anthropic-cookbook-weather-news.tools.json", 2, Anthropic),
    ("bfcl-gorilla_file_system.json", 18, Declarations),
    ("bfcl-math_api.json", 17, Declarations),
    ("bfcl-memory_kv.json", 15, Declarations),
    ("bfcl-memory_rec_sum.json", 5, Declarations),
    ("bfcl-memory_vector.json", 12, Declarations),
    ("bfcl-message_api.json", 10, Declarations),
    ("bfcl-posting_api.json", 14, Declarations),
    ("bfcl-ticket_api.json", 9, Declarations),
    ("bfcl-trading_bot.json", 20, Declarations),
    ("bfcl-travel_booking.json", 18, Declarations),
    ("bfcl-vehicle_control.json", 22, Declarations),
    ("bfcl-web_search.json", 2, Declarations),
    ("docker-alfresco.tools.json", 10, McpArray),
    ("docker-arm-mcp.tools.json", 7, Docker),
    ("docker-astro-docs.tools.json", 1, Docker),
    ("docker-buildkite.tools.json", 24, Docker),
    ("docker-database-server.tools.json", 7, Docker),
    ("docker-dotnet-types-explorer.tools.json", 5, Docker),
    ("docker-keboola-mcp.tools.json", 33, Docker),
    ("docker-kubectl-mcp-server.tools.json", 26, Docker),
    ("docker-maestro-mcp-server.tools.json", 35, Docker),
    ("docker-microsoft-learn.tools.json", 3, Docker),
    ("docker-neo4j.tools.json", 4, Docker),
    ("docker-okta-mcp-server.tools.json", 108, McpArray),
    ("docker-sonarqube.tools.json", 25, Docker),
    ("docker-stripe-remote.tools.json", 25, Docker),
    ("docker-zerodha-kite.tools.json", 15, Docker),
    ("docker-zscaler-mcp-server.tools.json", 302, Docker),
    ("gemini-cookbook-lights.tools.json", 3, Declarations),
    (
        "gemini-cookbook-movies-request-openapi-types.json",
        3,
        Gemini,
    ),
    ("gemini-cookbook-movies-request.json", 3, Gemini),
    ("mcp-proxy-cloudflare-browser.json", 5, Result),
    ("mcp-proxy-cloudflare-docs.json", 2, Result),
    ("mcp-proxy-cloudflare-radar.json", 19, Result),
    ("mcp-proxy-mcp-server-fetch.json", 1, Result),
    ("mcp-proxy-server-filesystem.json", 14, Result),
    ("mcp-proxy-server-github.json", 26, Result),
    ("mcp-proxy-server-memory.json", 9, Result),
    ("mcp-proxy-server-puppeteer.json", 7, Result),
    (
        "openai-realtime-twilio-demo-tool-templates.json",
        4,
        OpenAiResponses,
    ),
    ("tau-bench-airline.tools.json", 14, OpenAiChat),
    ("tau-bench-retail.tools.json", 16, OpenAiChat),
];

fn read(name: &str) -> Catalogue {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    read_catalogue(name, &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_table_names_every_fixture() {
    let on_disk = crate::fixture_files(&dir());
    let listed: Vec<String> = LISTS.iter().map(|(n, _, _)| n.to_string()).collect();
    assert_eq!(on_disk, listed);
    let readme = std::fs::read_to_string(dir().join("README.md")).unwrap();
    for (n, _, _) in LISTS {
        assert!(readme.contains(n), "README.md says nothing of {n}");
    }
}

#[test]
fn every_real_list_reads_with_every_tool_in_its_format() {
    for (name, count, format) in LISTS {
        let c = read(name);
        assert_eq!(c.tools.len(), *count, "{name}: tools read");
        let said: Vec<&String> = c.notes.iter().filter(|n| n.contains(" read as ")).collect();
        match format.words() {
            Some(w) => assert!(
                said.len() == 1 && said[0].contains(w),
                "{name}: expected a note `{w}`, got {:?}",
                c.notes
            ),
            None => assert!(said.is_empty(), "{name}: {:?}", c.notes),
        }
        for t in c.tools.values() {
            if let Some(a) = &t.args {
                assert!(
                    a.get("type").is_none_or(|ty| ty == "object"),
                    "{name}: {}",
                    t.name
                );
            }
        }
    }
}

#[test]
fn no_hint_means_a_write_and_says_so() {
    let retail = read("tau-bench-retail.tools.json");
    assert!(retail
        .tools
        .values()
        .all(|t| t.is_write() && t.no_effect_hint));
    let bk = read("docker-buildkite.tools.json");
    assert!(!bk.get("get_pipeline").unwrap().is_write());
    assert!(!bk.get("get_pipeline").unwrap().no_effect_hint);
    let cb = bk.get("create_build").unwrap();
    assert!(cb.is_write() && cb.no_effect_hint);
    let args = cb.args.as_ref().unwrap();
    assert_eq!(args["properties"]["branch"]["type"], "string");
    let req = args["required"].as_array().unwrap();
    assert!(req.contains(&Value::from("branch")) && !req.contains(&Value::from("environment")));
    // Gemini's OpenAPI type names and BFCL's Python ones are read as JSON Schema's.
    let g = read("gemini-cookbook-movies-request-openapi-types.json");
    let fm = g.get("find_movies").unwrap().args.as_ref().unwrap();
    assert_eq!(fm["type"], "object");
    assert_eq!(fm["properties"]["location"]["type"], "string");
    let m = read("bfcl-math_api.json");
    let add = m.get("add").unwrap();
    assert_eq!(
        add.args.as_ref().unwrap()["properties"]["a"]["type"],
        "number"
    );
    assert_eq!(add.result.as_ref().unwrap()["type"], "object");
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("`dict` stands for JSON Schema's `object`")));
}

#[test]
fn every_list_reads_back_from_its_export() {
    for (name, _, _) in LISTS {
        crate::assert_export_reads_back(name, &read(name));
    }
}

#[test]
fn a_byte_order_mark_changes_nothing() {
    for (name, _, _) in LISTS.iter().take(12) {
        let text = std::fs::read_to_string(dir().join(name)).unwrap();
        let plain = read_catalogue(name, &text).unwrap();
        let marked = read_catalogue(name, &format!("\u{feff}{text}")).unwrap();
        assert_eq!(meaning(&marked), meaning(&plain), "{name}");
        assert_eq!(marked.notes, plain.notes, "{name}");
        assert_eq!(marked.files, plain.files, "{name}");
    }
}
