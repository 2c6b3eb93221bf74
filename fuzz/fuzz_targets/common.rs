//! Shared by the YAML-reading targets.

/// libfuzzer-sys aborts on every panic, even one that is caught. `readers::yaml::load_yaml`
/// catches panics raised inside marked-yaml / yaml-rust2 and turns them into an `InputError`, so
/// those (and only those) are let through to its `catch_unwind`; any other panic still aborts.
pub fn allow_caught_yaml_panics() {
    let abort_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_yaml_crate = info.location().is_some_and(|l| {
            let f = l.file();
            f.contains("/marked-yaml-") || f.contains("/yaml-rust2-")
        });
        if !in_yaml_crate {
            abort_hook(info);
        }
    }));
}
