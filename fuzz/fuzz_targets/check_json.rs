#![no_main]
//! The tool check's JSON inputs: `<call JSON> NUL <history JSON>` (without a NUL, the whole input
//! is the call and the history is empty). Both are parsed exactly as `qls check` parses them
//! (`cli/src/cmd_check.rs`); when they parse, `toolcheck::check::check` and `record` run
//! against the shop catalogue, with and without the shop's rulebook and agents, over the history
//! as given and over the same history signed with the key (so the rules past `history_invalid`
//! are reached). None of it may panic.
use readers::agent::{read_agent_file};
use ir::agent::{AgentFile};
use readers::catalogue::{read_catalogue};
use ir::catalogue::{Catalogue};
use readers::rulebook::{compile_text};
use ir::rulebook::{Rulebook};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use toolcheck::check::{agents_of, record};
use toolcheck::{Call, CheckContext, History, Key};

const CATALOGUE: &str = include_str!("../../examples/shop/shop.catalogue.yaml");
const POLICY: &str = include_str!("../../examples/shop/policy.co");
const AGENTS: &str = include_str!("../../examples/shop/agent.yaml");

struct Shop {
    plain: Catalogue,
    overlaid: Catalogue,
    rulebook: Rulebook,
    agents: AgentFile,
}

fn shop() -> &'static Shop {
    static SHOP: OnceLock<Shop> = OnceLock::new();
    SHOP.get_or_init(|| {
        let plain = read_catalogue("shop.catalogue.yaml", CATALOGUE).expect("shop catalogue");
        let compiled = compile_text("policy.co", POLICY).expect("shop policy");
        let mut overlaid = plain.clone();
        compiled.overlay.apply(&mut overlaid);
        let agents = read_agent_file("agent.yaml", AGENTS).expect("shop agent.yaml");
        Shop {
            plain,
            overlaid,
            rulebook: compiled.rulebook,
            agents,
        }
    })
}

fn decide(ctx: &CheckContext<'_>, history: &History, call: &Call) {
    let decision = toolcheck::check(ctx, history, call);
    let _ = serde_json::to_string(&decision);
    let mut appended = history.clone();
    record(ctx, &mut appended, call, &decision);
    let _ = serde_json::to_string(&appended.to_value());
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (call_text, history_text) = match text.split_once('\0') {
        Some((c, h)) => (c, h),
        None => (text, r#"{"entries": []}"#),
    };
    // As `read_call` and `read_history` in cli/src/cmd_check.rs.
    let Ok(call) = serde_json::from_str::<Call>(call_text) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(history_text) else {
        return;
    };
    let Ok(history) = History::from_value(&value) else {
        return;
    };
    let key = Key::dev();
    let mut signed = history.clone();
    signed.sign(&key);

    let shop = shop();
    let bare_settings = Default::default();
    let bare = CheckContext {
        catalogue: &shop.plain,
        rulebook: None,
        settings: &bare_settings,
        agents: Default::default(),
        key: &key,
    };
    let full = CheckContext {
        catalogue: &shop.overlaid,
        rulebook: Some(&shop.rulebook),
        settings: &shop.agents.settings,
        agents: agents_of(&shop.agents),
        key: &key,
    };
    for h in [&history, &signed] {
        decide(&bare, h, &call);
        decide(&full, h, &call);
    }
});
