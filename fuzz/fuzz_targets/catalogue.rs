#![no_main]
//! `readers::catalogue::read_catalogue` as YAML and as JSON (JSON catalogue and MCP `tools/list`).
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(init: common::allow_caught_yaml_panics(), |data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for name in ["c.catalogue.yaml", "c.catalogue.json"] {
            if let Ok(cat) = readers::catalogue::read_catalogue(name, text) {
                let _ = readers::catalogue::check_merged(&cat);
            }
        }
    }
});
