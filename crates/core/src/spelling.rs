//! Enums whose query-string spellings are declared once, next to each variant: the
//! spelling (what the URL, the CLI and the JSON report write), a short label (what the
//! form's option says) and a note (what the README's key table says after the spelling;
//! compiled natively only).
//! The codec, `--help`, the README table and the form's options all read
//! [`Spelled::ALL`], so no list of spellings is written twice.

/// One option of a spelled enum: `(spelling, label, note)`.
pub type Spelling = (&'static str, &'static str, &'static str);

/// An enum declared with [`spelled!`](crate::spelled).
pub trait Spelled: Copy + PartialEq + 'static {
    /// Every variant, in the order the form and the documentation list them.
    const ALL: &'static [Self];
    /// The stable query-string spelling.
    fn as_str(self) -> &'static str;
    /// The form's label.
    fn label(self) -> &'static str;
    /// The documentation's note (may be empty). Native builds only, as the key table's
    /// texts ([`crate::contract::query::Key`]): the page never shows it.
    #[cfg(not(target_arch = "wasm32"))]
    fn note(self) -> &'static str;
    /// The variant spelled `text` (ASCII case-insensitive, surrounding spaces ignored).
    fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.as_str().eq_ignore_ascii_case(t))
    }
    /// Every option as `(spelling, label, note)` (the note empty in the page's wasm).
    fn spellings() -> Vec<Spelling> {
        Self::ALL
            .iter()
            .map(|v| (v.as_str(), v.label(), note_of(*v)))
            .collect()
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn note_of<T: Spelled>(v: T) -> &'static str {
    v.note()
}

#[cfg(target_arch = "wasm32")]
fn note_of<T: Spelled>(_: T) -> &'static str {
    ""
}

/// Declares an enum and its spellings:
///
/// ```
/// memfit_core::spelled! {
///     /// A toy.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub enum Toy {
///         /// The first.
///         A = "a", "Aye", "";
///         /// The second.
///         B = "b-b", "Bee", "the second";
///     }
/// }
/// use memfit_core::spelling::Spelled;
/// assert_eq!(Toy::B.as_str(), "b-b");
/// assert_eq!(Toy::parse(" B-B "), Some(Toy::B));
/// assert_eq!(Toy::ALL, &[Toy::A, Toy::B]);
/// ```
#[macro_export]
macro_rules! spelled {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $spelling:literal, $label:literal, $note:literal;
            )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }
        impl $crate::spelling::Spelled for $name {
            const ALL: &'static [$name] = &[$($name::$variant),+];
            fn as_str(self) -> &'static str {
                match self { $($name::$variant => $spelling,)+ }
            }
            fn label(self) -> &'static str {
                match self { $($name::$variant => $label,)+ }
            }
            #[cfg(not(target_arch = "wasm32"))]
            fn note(self) -> &'static str {
                match self { $($name::$variant => $note,)+ }
            }
        }
        impl $name {
            /// Every variant, in the documented order.
            pub const ALL: &'static [$name] = <$name as $crate::spelling::Spelled>::ALL;
            /// The stable query-string spelling.
            pub fn as_str(self) -> &'static str {
                <$name as $crate::spelling::Spelled>::as_str(self)
            }
        }
    };
}
