//! The layers' one-way rule and their map, checked on the source. The map is the layer
//! table of `docs/architecture.md`: its rows, from the top down, are the order of the
//! modules. A module's code (not its comments, not its unit tests) names only modules after
//! it in that order; every module of the crate has its row, every row a module, and a
//! module's files are each named in its row, so the map cannot drift from the code.

use std::path::{Path, PathBuf};

/// The map: `docs/architecture.md`, beside the crate.
fn map() -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The rows of the map's layer table, from the top down: each module's path (`layer::name`,
/// or the layer alone for `session`) and what its row says.
fn rows(map: &str) -> Vec<(String, String)> {
    let mut layer = String::new();
    let mut rows = Vec::new();
    let table = map.lines().skip_while(|line| !line.starts_with("| layer / module |")).skip(2);
    for line in table.take_while(|line| line.starts_with('|')) {
        let mut cells = line.split('|').skip(1);
        let (name, owns) = (cells.next().unwrap_or_default().trim(), cells.next().unwrap_or_default().trim());
        if let Some(heading) = name.strip_prefix("**`").and_then(|name| name.strip_suffix("/`**")) {
            layer = heading.to_string();
            continue;
        }
        let name = name.trim_matches('`');
        let path = if name == layer { name.to_string() } else { format!("{layer}::{name}") };
        rows.push((path, owns.to_string()));
    }
    rows
}

/// Where `path` (a `crate::` path without the prefix) falls in `order`.
fn rank(order: &[(String, String)], path: &str) -> Option<usize> {
    order.iter().position(|(module, _)| path == module || path.starts_with(&format!("{module}::")))
}

/// Every `.rs` file of the crate's source, with its module path.
fn modules() -> Vec<(String, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(&src).unwrap().with_extension("");
                let module = relative.to_string_lossy().trim_end_matches("/mod").replace('/', "::");
                files.push((module, path));
            }
        }
    }
    files
}

/// Whether `module` is one the rule reads: not the facade, the fuzz glue or this test, nor
/// a layer's own `mod.rs` (declarations only).
fn layered(module: &str) -> bool {
    module.contains("::") || module == "session"
}

#[test]
fn every_module_names_only_modules_below_it() {
    let order = rows(&map());
    let mut checked = 0;
    let mut wrong = vec![];
    for (module, file) in modules().into_iter().filter(|(module, _)| layered(module)) {
        let own =
            rank(&order, &module).unwrap_or_else(|| panic!("{module} has no row in the layer table of docs/architecture.md"));
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        for line in code.lines().filter(|line| !line.trim_start().starts_with("//")) {
            for (at, _) in line.match_indices("crate::") {
                let path: String = line[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
                let Some(named) = rank(&order, &path) else { continue };
                checked += 1;
                if named < own {
                    wrong.push(format!("{module} names crate::{path}"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} paths were read");
    assert!(wrong.is_empty(), "arrows that run back up: {wrong:#?}");
}

#[test]
fn the_map_names_every_module_and_every_file_of_one() {
    let order = rows(&map());
    assert!(order.len() > 40, "only {} rows were read from the map", order.len());
    let modules = modules();
    let mut drift = vec![];
    for (row, _) in &order {
        if !modules.iter().any(|(module, _)| module == row || module.starts_with(&format!("{row}::"))) {
            drift.push(format!("the row `{row}` names no module"));
        }
    }
    for (module, _) in modules.iter().filter(|(module, _)| layered(module)) {
        let Some(at) = rank(&order, module) else {
            drift.push(format!("{module} has no row"));
            continue;
        };
        // A file below a row's module (`sandbox::runtime::timers`) is named in its row.
        let (row, owns) = &order[at];
        let Some(file) = module.strip_prefix(&format!("{row}::")).and_then(|below| below.split("::").next()) else {
            continue;
        };
        if file == "tests" {
            continue; // a module's unit tests, kept in a file of their own
        }
        if !owns.contains(&format!("`{file}`")) && !owns.contains(&format!("`{file}:")) && !owns.contains(&format!("`{file}/")) {
            drift.push(format!("the row of `{row}` does not name `{file}`"));
        }
    }
    assert!(drift.is_empty(), "docs/architecture.md drifted from the code: {drift:#?}");
}
