#![no_main]
//! `readers::deps::parse` must return `Ok` or an `InputError`, never panic or hang, for every
//! `--dependencies` format: the first byte picks the file name, the rest is the file's text.
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const NAMES: [&str; 6] = [
    "uv.lock",
    "poetry.lock",
    "requirements.txt",
    "package-lock.json",
    "pnpm-lock.yaml",
    "go.sum",
];

fuzz_target!(init: common::allow_caught_yaml_panics(), |data: &[u8]| {
    let Some((pick, rest)) = data.split_first() else { return };
    if let Ok(text) = std::str::from_utf8(rest) {
        let name = NAMES[*pick as usize % NAMES.len()];
        let path = std::path::Path::new("/nonexistent-qls-fuzz").join(name);
        let _ = readers::deps::parse(&path, name, text, &mut vec![]);
    }
});
