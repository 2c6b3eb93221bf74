#![no_main]
//! `readers::graph::read_graph` must return `Ok` or an `InputError`, never panic or hang.
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(init: common::allow_caught_yaml_panics(), |data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = readers::graph::read_graph("graph.json", text);
    }
});
