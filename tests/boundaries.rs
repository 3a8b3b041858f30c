//! The pure modules stay pure: `core/`, `share/` and `chart/` never name leptos,
//! web-sys or wasm-bindgen, and all `window.location`/`history` access is in one file.

use std::path::Path;

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

#[test]
fn pure_modules_import_no_web_crates() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for module in ["core", "share", "chart"] {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
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
    assert!(checked >= 8, "only {checked} files checked");
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
    for k in memfit::share::query::KEYS {
        assert!(
            readme.contains(&format!("| `{}` |", k.key)),
            "README lacks a row for `{}`",
            k.key
        );
    }
    for row in memfit::share::query::markdown_table().lines() {
        assert!(
            readme.lines().any(|l| l == row),
            "README's key table differs from `memfit --keys-markdown` at: {row}"
        );
    }
}

/// The modules of `core/` and who they import (`use super::x` / `crate::core::x`).
fn core_imports() -> Vec<(String, Vec<String>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "mod")
        .collect();
    files
        .iter()
        .filter(|f| f.file_stem().unwrap() != "mod")
        .map(|f| {
            let me = f.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(f).unwrap();
            // Code before the unit tests, without comments.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let mut deps: Vec<String> = names
                .iter()
                .filter(|n| **n != me)
                .filter(|n| {
                    code.lines()
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .any(|l| {
                            l.contains(&format!("super::{n}"))
                                || l.contains(&format!("crate::core::{n}"))
                        })
                })
                .cloned()
                .collect();
            deps.sort();
            (me, deps)
        })
        .collect()
}

/// The arrows between `core/` modules point one way: no module reaches itself
/// through its imports. The ledger is the bottom floor (it imports no other module).
#[test]
fn core_modules_have_no_cycle() {
    let graph = core_imports();
    let deps = |m: &str| {
        graph
            .iter()
            .find(|(n, _)| n == m)
            .map(|(_, d)| d.clone())
            .unwrap_or_default()
    };
    for (m, _) in &graph {
        // Depth-first search from m's imports back to m.
        let mut stack = deps(m);
        let mut seen: Vec<String> = Vec::new();
        while let Some(n) = stack.pop() {
            assert_ne!(&n, m, "module cycle through core/{m}.rs");
            if !seen.contains(&n) {
                seen.push(n.clone());
                stack.extend(deps(&n));
            }
        }
    }
    assert!(
        deps("ledger").is_empty(),
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
