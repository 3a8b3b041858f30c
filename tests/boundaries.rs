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

/// The README's key table documents every query key the codec knows.
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
}
