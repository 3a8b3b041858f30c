//! The pure code stays pure: the estimator crate's manifest has no web dependency (so
//! the compiler enforces it), `crates/`, `src/chart/`, `src/learn.rs` and
//! `src/export.rs` never name leptos, web-sys or wasm-bindgen, and all
//! `window.location`/`history` access is in one file.

use std::path::Path;

/// A folder's unit-test file (`tests.rs`, or `tests_*.rs` beside it: `#[cfg(test)]` modules).
fn is_unit_tests(f: &Path) -> bool {
    f.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "tests.rs" || (n.starts_with("tests_") && n.ends_with(".rs")))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The web crates `crates/*/Cargo.toml` may not depend on: the compiler then refuses any
/// import of them in the estimator.
#[test]
fn library_manifests_have_no_web_dependency() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for krate in ["core", "evidence"] {
        let manifest =
            std::fs::read_to_string(root.join("crates").join(krate).join("Cargo.toml")).unwrap();
        // Every dependency line (`name = ...`; comments left out).
        let deps = manifest
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()));
        for dep in deps {
            for banned in ["leptos", "web-sys", "wasm-bindgen", "js-sys", "plotters"] {
                assert!(
                    !dep.contains(banned),
                    "crates/{krate}/Cargo.toml depends on `{dep}`"
                );
            }
        }
    }
}

#[test]
fn pure_modules_import_no_web_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut files = Vec::new();
    for dir in ["crates", "src/chart"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.push(root.join("src/learn.rs"));
    files.push(root.join("src/export.rs"));
    {
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // Code lines only (doc comments may name the crates to say they are not used).
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for banned in ["leptos", "web_sys", "wasm_bindgen", "js_sys"] {
                    assert!(
                        !line.contains(banned),
                        "{} uses `{banned}`: {line}",
                        f.display()
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} files checked");
}

#[test]
fn url_access_lives_in_one_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let touching: Vec<_> = files
        .iter()
        .filter(|f| {
            let t = std::fs::read_to_string(f).unwrap();
            t.contains(".location()") || t.contains(".history()")
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert_eq!(touching, ["ui/url.rs"]);
}

/// The README's key table is the generated one, row for row (`memfit --keys-markdown`).
#[test]
fn readme_documents_every_key() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for k in memfit_core::contract::query::KEYS {
        assert!(
            readme.contains(&format!("| `{}` |", k.name)),
            "README lacks a row for `{}`",
            k.name
        );
    }
    for row in memfit_core::contract::query::markdown_table().lines() {
        assert!(
            readme.lines().any(|l| l == row),
            "README's key table differs from `memfit --keys-markdown` at: {row}"
        );
    }
}

/// The top-level modules of the estimator crate (a file, or a folder whose files are one
/// module) and which of them each imports (`crate::x`, or `super::x` from a top-level
/// file), read from the code before its unit tests, comments left out.
fn core_imports() -> Vec<(String, Vec<String>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
    let mut modules: Vec<(String, String, bool)> = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let code = |f: &Path| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            code.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if p.is_dir() {
            let mut files = Vec::new();
            rust_files(&p, &mut files);
            // A folder's `tests.rs` is its unit tests (`#[cfg(test)] mod tests;`).
            files.retain(|f| !is_unit_tests(f));
            let all: Vec<String> = files.iter().map(|f| code(f)).collect();
            modules.push((name, all.join("\n"), true));
        } else if p.extension().is_some_and(|e| e == "rs") && name != "lib" {
            modules.push((name.clone(), code(&p), false));
        }
    }
    let names: Vec<String> = modules.iter().map(|(n, ..)| n.clone()).collect();
    modules
        .iter()
        .map(|(me, code, folder)| {
            let mut deps: Vec<String> = names
                .iter()
                .filter(|n| *n != me)
                .filter(|n| {
                    code.contains(&format!("crate::{n}"))
                        || (!folder && code.contains(&format!("super::{n}")))
                })
                .cloned()
                .collect();
            deps.sort();
            (me.clone(), deps)
        })
        .collect()
}

/// The arrows between `core/` modules point one way: no module reaches itself
/// through its imports. The ledger is the bottom floor (it imports no other module).
#[test]
fn core_modules_have_no_cycle() {
    let graph = core_imports();
    let deps = |m: &str| deps_of(&graph, m);
    if let Some(m) = on_a_cycle(&graph) {
        panic!("module cycle through core/{m}.rs");
    }
    // The floors: byte arithmetic (units), formulas (expr), then the ledger.
    assert!(
        deps("units").iter().all(|d| d == "spelling"),
        "units imports {:?}",
        deps("units")
    );
    assert_eq!(deps("expr"), ["units"], "expr imports {:?}", deps("expr"));
    assert_eq!(
        deps("ledger"),
        ["expr", "units"],
        "ledger imports {:?}",
        deps("ledger")
    );
    for floor in ["train", "infer", "conventions", "activations"] {
        assert!(
            !deps(floor).contains(&"estimate".to_string()),
            "{floor} imports estimate"
        );
    }
    assert!(graph.len() >= 15, "only {} modules read", graph.len());
}

/// Each node with the siblings it imports.
type Graph = Vec<(String, Vec<String>)>;

/// What node `m` imports in `graph`.
fn deps_of(graph: &Graph, m: &str) -> Vec<String> {
    graph
        .iter()
        .find(|(n, _)| n == m)
        .map(|(_, d)| d.clone())
        .unwrap_or_default()
}

/// A node that reaches itself through its imports (depth-first from each node's imports).
fn on_a_cycle(graph: &Graph) -> Option<String> {
    for (m, _) in graph {
        let mut stack = deps_of(graph, m);
        let mut seen: Vec<String> = Vec::new();
        while let Some(n) = stack.pop() {
            if &n == m {
                return Some(m.clone());
            }
            if !seen.contains(&n) {
                seen.push(n.clone());
                stack.extend(deps_of(graph, &n));
            }
        }
    }
    None
}

/// A file's code before its unit tests, comments left out.
fn code_of(f: &Path) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` names module `name` in path `prefix` (`super::name`, `crate::a::name`)
/// as a whole word.
fn names(code: &str, prefix: &str, name: &str) -> bool {
    let pat = format!("{prefix}{name}");
    code.match_indices(&pat).any(|(i, _)| {
        let after = code[i + pat.len()..].chars().next();
        let before = code[..i].chars().next_back();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Every folder under `root` (a crate's `src`): its files and sub-folders as nodes (a
/// sub-folder is all its files), with an arrow where one names a sibling (`super::x` from a
/// file, `crate::path::x` from anywhere). The folder's `mod.rs` (its facade, which declares
/// the children) and unit-test files are left out.
fn folder_graphs(root: &Path) -> Vec<(String, Graph)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let rel = dir
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('/', "::");
        let prefix = if rel.is_empty() {
            "crate::".to_string()
        } else {
            format!("crate::{rel}::")
        };
        let mut nodes: Vec<(String, String, bool)> = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                dirs.push(p.clone());
                let mut files = Vec::new();
                rust_files(&p, &mut files);
                files.retain(|f| !is_unit_tests(f));
                let all: Vec<String> = files.iter().map(|f| code_of(f)).collect();
                nodes.push((name, all.join("\n"), true));
            } else if p.extension().is_some_and(|e| e == "rs")
                && !["mod", "lib", "main"].contains(&name.as_str())
                && !is_unit_tests(&p)
            {
                nodes.push((name, code_of(&p), false));
            }
        }
        let graph = nodes
            .iter()
            .map(|(me, code, folder)| {
                let deps = nodes
                    .iter()
                    .map(|(n, ..)| n.clone())
                    .filter(|n| n != me)
                    .filter(|n| names(code, &prefix, n) || (!folder && names(code, "super::", n)))
                    .collect();
                (me.clone(), deps)
            })
            .collect();
        out.push((dir.display().to_string(), graph));
    }
    out
}

/// No file reaches itself through its imports, in any folder of the estimator, the evidence
/// crate or the page (the report and the explorer's JSON, and the evidence's comparisons and
/// the page's accuracy asset, once did).
#[test]
fn no_cycle_between_files_in_any_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = 0;
    for krate in ["crates/core/src", "crates/evidence/src", "src"] {
        for (dir, graph) in folder_graphs(&root.join(krate)) {
            folders += 1;
            if let Some(m) = on_a_cycle(&graph) {
                panic!("a cycle through {dir}/{m} ({m} → … → {m})");
            }
        }
    }
    assert!(folders >= 20, "only {folders} folders read");
}

/// The checker sees a cycle when there is one.
#[test]
fn the_cycle_check_finds_a_planted_cycle() {
    let dir = std::env::temp_dir().join(format!("memfit-cycle-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("a/mod.rs"), "mod x; mod y;").unwrap();
    std::fs::write(dir.join("a/x.rs"), "use super::y::f;").unwrap();
    std::fs::write(dir.join("a/y.rs"), "fn g() { crate::a::x::h() }").unwrap();
    let graphs = folder_graphs(&dir);
    let a = graphs.iter().find(|(d, _)| d.ends_with("/a")).unwrap();
    let dep = |m: &str| a.1.iter().find(|(n, _)| n == m).unwrap().1.clone();
    assert_eq!(dep("x"), ["y"]);
    assert_eq!(dep("y"), ["x"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Parse, don't clamp: `.max(1)` in the estimator's code (unit tests aside) may only
/// shrink. The scenario's counts, the resolved `Layout`'s degrees, `Arch`'s sizes (layers,
/// hidden, heads, kv_heads, head_dim, ffn, vocab) and Megatron's degrees are non-zero types
/// (`nonzero::Count`, `NonZeroU64`), so nothing divides by them through a clamp; a quotient
/// that may round to 0 goes through the named `nonzero::div_at_least_one`, a mixture's `k`
/// through `Arch::routed_k`. The exceptions left, each with its reason beside it:
/// - `units::mul_div*`: the byte helpers treat a divisor of 0 as 1 (documented there);
/// - config.json divisors in `hfconfig` (untrusted input) and a hybrid's placeholder `ffn`;
/// - the parser itself (`contract/keys.rs`: a `Count` key's lower bound raised to 1);
/// - plain counts that are ≥ 1 but not typed (Ψ, a block's parameters, tokens a step,
///   `max_len`, the logits a walk holds, a tensor table's elements, KV bytes a token of an
///   attention-free model) and solver options (`max_nodes`, `limit`, budget progress);
/// - `gen = 0` walking one decode group, `n_ctx / parallel` in llama.cpp's concurrency.
///
/// Only an inline unit-test module (`#[cfg(test)] mod tests {`) ends a file's code here;
/// a `#[cfg(test)] mod tests;` declaration does not hide what follows it.
#[test]
fn clamps_do_not_grow() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src"),
        &mut files,
    );
    let n: usize = files
        .iter()
        .filter(|f| !is_unit_tests(f))
        .map(|f| code_outside_test_module(f).matches(".max(1)").count())
        .sum();
    assert!(
        n <= BOUND,
        "{n} `.max(1)` in crates/core (at most {BOUND}): carry the bound in a type"
    );
}

/// The `.max(1)` left in crates/core (see [`clamps_do_not_grow`]).
const BOUND: usize = 30;

/// `f`'s code up to its inline unit-test module, comments left out.
fn code_outside_test_module(f: &Path) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let end = text
        .match_indices("#[cfg(test)]")
        .map(|(i, _)| i)
        .find(|&i| {
            let rest = text[i + "#[cfg(test)]".len()..].trim_start();
            let line = rest.lines().next().unwrap_or("");
            line.starts_with("mod ") && line.trim_end().ends_with('{')
        })
        .unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}
