//! A panic in the page (release builds abort after it) must not leave a blank page:
//! the hook replaces the page with a message and a "reset" link (the page without
//! its query string). The text goes in with `textContent`, never as markup.

use super::url;
use leptos::prelude::document;

/// Installs the hook: the console message (as before), then the page message.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        show(&info.to_string());
    }));
}

fn show(message: &str) {
    let doc = document();
    let Some(body) = doc.body() else {
        return;
    };
    let el = |tag: &str, text: &str| {
        let e = doc.create_element(tag).ok()?;
        e.set_text_content(Some(text));
        Some(e)
    };
    let (Some(box_), Some(title), Some(what), Some(detail), Some(reset)) = (
        el("section", ""),
        el("h1", "memfit stopped with an internal error"),
        el(
            "p",
            "Nothing is lost: your settings are in the address bar, so reloading tries again. \
             If the same link fails again, reset to the defaults and please report the link.",
        ),
        el("pre", message),
        el("a", "Reset: open memfit without the settings in the link"),
    ) else {
        return;
    };
    let _ = box_.set_attribute("class", "panel panic");
    let _ = box_.set_attribute("role", "alert");
    let _ = box_.set_attribute("data-testid", "panic");
    let _ = reset.set_attribute("href", &url::reset_href());
    let _ = reset.set_attribute("data-testid", "panic-reset");
    body.set_text_content(None);
    for child in [&title, &what, &detail, &reset] {
        let _ = box_.append_child(child);
    }
    let _ = body.append_child(&box_);
}

/// Test-only (`--features panic-test`): `?panic_test=1` panics shortly after the page
/// has mounted, so the browser test can check the message on a live page.
#[cfg(feature = "panic-test")]
pub fn maybe_panic_for_test() {
    if url::read_query().split('&').any(|kv| kv == "panic_test=1") {
        leptos::prelude::set_timeout(
            || panic!("panic test (built with the panic-test feature)"),
            std::time::Duration::from_millis(100),
        );
    }
}
