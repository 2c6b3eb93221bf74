#![no_main]
//! `readers::rulebook::sheet::compile_sheet` must return `Ok` or an `InputError`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = readers::rulebook::sheet::compile_sheet("rules.yaml", text);
    }
});
