//! The diagnostic codes: stable names for each kind of mistake, with the longer
//! explanation `cargo run -p codegen -- --explain E0xxx` prints (`explain/E0xxx.md`).

use std::fmt;

macro_rules! codes {
    ($($variant:ident = $code:literal, $title:literal;)*) => {
        /// A kind of mistake in a definition. Codes never change meaning and are never
        /// reused; a new kind of mistake gets the next number.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(#[doc = $title] $variant,)*
        }

        impl Code {
            /// Every code, in order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// `E0001` ...
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            /// One line saying what the code is about.
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$variant => $title,)*
                }
            }

            /// The longer explanation, with an erroneous example and its fix (Markdown).
            pub fn explanation(self) -> &'static str {
                match self {
                    $(Code::$variant => include_str!(concat!("explain/", $code, ".md")),)*
                }
            }
        }
    };
}

codes! {
    Syntax = "E0001", "the file does not parse";
    UnknownKey = "E0002", "a key that is not part of the grammar";
    MissingKey = "E0003", "a required key is missing";
    WrongType = "E0004", "a value of the wrong type";
    Duplicate = "E0005", "something is given twice, or two settings contradict";
    InvalidName = "E0006", "a name that Kubernetes does not accept";
    NameTaken = "E0007", "two definitions claim the same name";
    UnknownValue = "E0008", "a value outside the accepted set";
    ImpliedField = "E0009", "`apiVersion`, `kind` or `metadata` declared in a schema";
    SchemaType = "E0010", "a schema's type is missing or does not fit its keywords";
    UndeclaredField = "E0011", "a field that the schema does not declare";
    NonStructural = "E0012", "a schema that is not structural";
    InvalidPattern = "E0013", "a `pattern` that does not compile";
    FieldPath = "E0014", "a JSON path that does not point where it must";
    Protobuf = "E0015", "protobuf field numbers that cannot be used";
    CreateOnly = "E0016", "a create-only kind or subresource declared wrongly";
    RustType = "E0017", "a Rust type that has no schema";
    RustShape = "E0018", "a Rust definition without the shape of a resource";
    Upstream = "E0019", "upstream's documents cannot be imported as selected";
    StorageVersion = "E0020", "a kind's versions do not have exactly one storage version";
    VersionIdentity = "E0021", "the versions of one kind disagree on its identity";
    ConversionRule = "E0022", "a conversion rule that does not fit the versions' schemas";
    ConversionHook = "E0023", "a conversion hook the server does not have";
}

impl Code {
    /// The code named `E0xxx` (case-insensitive), if there is one.
    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
