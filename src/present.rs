//! Presenters: the small pure functions the page's views bind (texts, summaries, look-ups),
//! kept out of `view!` so they are tested natively. Nothing here touches the DOM.

use memfit_core::model::{presets, ParamCount};
use memfit_core::scenario::Layout;
use memfit_core::units::group_digits;

/// Finds a preset by id or display name (what the search box accepts).
///
/// ```
/// assert_eq!(memfit::present::find_preset("Llama 2 7B"), Some("llama-2-7b"));
/// assert_eq!(memfit::present::find_preset(" GPT2 "), Some("gpt2"));
/// assert_eq!(memfit::present::find_preset("gpt-5"), None);
/// ```
pub fn find_preset(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    presets()
        .iter()
        .find(|p| p.id == t || p.name.to_ascii_lowercase() == t)
        .map(|p| p.id)
}

/// "dp·tp·pp·cp = 2·2·2·1 = 8 of 8 GPUs".
///
/// ```
/// use memfit_core::scenario::Layout;
/// let l = Layout { dp: 2, tp: 2, pp: 2, cp: 1, world: 16, gpus_per_node: 8 };
/// assert_eq!(memfit::present::layout_summary(&l), "dp·tp·pp·cp = 2·2·2·1 = 8 of 16 GPUs");
/// ```
pub fn layout_summary(l: &Layout) -> String {
    format!(
        "dp·tp·pp·cp = {}·{}·{}·{} = {} of {} GPUs",
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        l.used(),
        l.world
    )
}

/// The model panel's count line: total, active per token and the largest layer.
pub fn param_count_line(c: &ParamCount) -> String {
    format!(
        "From the architecture: {} parameters ({} active per token), largest layer {}.",
        group_digits(c.total),
        group_digits(c.active),
        group_digits(c.largest_layer)
    )
}
