//! Reading a workload's `[workload.NAME]` options into its own serde struct, with one-line
//! errors shared so every workload words a bad key or value the same way, and the value
//! shapes several workloads take (a size as a number or a string, one value or a list).

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::plan::size::parse_whole_size;

/// A size as written: a number of bytes, or a string such as `"4k"` (or a word some
/// options take besides sizes: `"small"`, `"off"`, `"25%"`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "a number of bytes or a string such as \"4k\"")]
pub enum SizeValue {
    Bytes(i64),
    Text(String),
}

impl SizeValue {
    /// The size in whole bytes (fio's syntax: `4k`, `1.5g`, no fraction of a byte), more
    /// than zero; `None` when it is not one.
    pub fn whole_bytes(&self) -> Option<u64> {
        match self {
            SizeValue::Bytes(i) => u64::try_from(*i).ok(),
            SizeValue::Text(s) => parse_whole_size(s).ok(),
        }
        .filter(|&b| b > 0)
    }

    /// The word, when the value is a string.
    pub fn text(&self) -> Option<&str> {
        match self {
            SizeValue::Text(s) => Some(s),
            SizeValue::Bytes(_) => None,
        }
    }
}

/// Shown as the plan file writes it: `4096`, `"4k"`.
impl fmt::Display for SizeValue {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SizeValue::Bytes(i) => write!(f, "{i}"),
            SizeValue::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// A string option's value, shown quoted in errors as the plan file writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Word(pub String);

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// One value, standing for a list of one, or a list (an axis such as io's `bs = "4k"` or
/// `bs = ["4k", "1m"]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "one value or a list of values")]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The values, in the order written.
    pub fn items(&self) -> &[T] {
        match self {
            OneOrMany::One(v) => std::slice::from_ref(v),
            OneOrMany::Many(v) => v,
        }
    }
}

/// The options of a workload that takes none: any key is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// Parses a `[workload.NAME]` table into the workload's options struct (serde, with
/// `deny_unknown_fields`). Errors are one line that names the table, the bad key and the
/// valid keys.
pub fn parse<T: DeserializeOwned>(workload: &str, table: &toml::Table) -> Result<T, String> {
    T::deserialize(toml::Value::Table(table.clone()))
        .map_err(|e| one_line(workload, &e.to_string()))
}

/// Rewords serde's error text as fsarena's one line.
fn one_line(workload: &str, msg: &str) -> String {
    let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    // toml names the nested table an error is in after the message: "… in `mix`".
    let (msg, within) = match msg.rsplit_once(" in `") {
        Some((m, table)) => (m.to_string(), format!(" in `{}", table)),
        None => (msg, String::new()),
    };
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        let bad = format!("{}{within}", rest.split(", ").next().unwrap_or(rest));
        // "unknown field `x`, expected one of `a`, `b`" | "expected `a`" | "there are no fields"
        let valid = rest.split_once(", ").map_or("", |(_, v)| v);
        let valid: Vec<&str> = valid
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|s| !s.is_empty())
            .collect();
        return if valid.is_empty() {
            format!("[workload.{workload}]: unknown option {bad}; {workload} takes no options")
        } else {
            format!(
                "[workload.{workload}]: unknown option {bad}; valid: {}",
                valid.join(", ")
            )
        };
    }
    match within.strip_prefix(" in ") {
        // "… in `size`": the key leads, as in every other line about one key.
        Some(key) => format!("[workload.{workload}]: {key}: {msg}"),
        None => format!("[workload.{workload}]: {msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        cold: Option<bool>,
        fraction: Option<f64>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Mix {
        insert: Option<u32>,
        read: Option<u32>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Nested {
        mix: Option<Mix>,
    }

    fn table(src: &str) -> toml::Table {
        src.parse().expect("test table")
    }

    #[test]
    fn unknown_keys_name_the_valid_ones_on_one_line() {
        let e = parse::<Two>("dupes", &table("colt = true")).unwrap_err();
        assert_eq!(
            e,
            "[workload.dupes]: unknown option `colt`; valid: cold, fraction"
        );
        let e = parse::<Nested>("db", &table("[mix]\ninsret = 1")).unwrap_err();
        assert_eq!(
            e,
            "[workload.db]: unknown option `insret` in `mix`; valid: insert, read"
        );
        let e = parse::<NoOptions>("scan", &table("x = 1")).unwrap_err();
        assert_eq!(
            e,
            "[workload.scan]: unknown option `x`; scan takes no options"
        );
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Shapes {
        size: Option<SizeValue>,
        bs: Option<OneOrMany<SizeValue>>,
    }

    #[test]
    fn numbers_strings_and_lists_read_into_one_type() {
        let s = parse::<Shapes>("io", &table("size = 4096\nbs = [\"4k\", 8192]")).unwrap();
        assert_eq!(s.size.as_ref().and_then(SizeValue::whole_bytes), Some(4096));
        let bs: Vec<Option<u64>> =
            s.bs.unwrap()
                .items()
                .iter()
                .map(|b| b.whole_bytes())
                .collect();
        assert_eq!(bs, vec![Some(4096), Some(8192)]);
        assert_eq!(SizeValue::Text("1.3".into()).whole_bytes(), None);
        assert_eq!(SizeValue::Text("4k".into()).to_string(), "\"4k\"");
        let e = parse::<Shapes>("io", &table("size = true")).unwrap_err();
        assert_eq!(
            e,
            "[workload.io]: `size`: a number of bytes or a string such as \"4k\""
        );
        let e = parse::<Shapes>("io", &table("bs = [true]")).unwrap_err();
        assert!(e.starts_with("[workload.io]: `bs`: "), "{e}");
    }

    #[test]
    fn wrong_types_are_one_line() {
        let e = parse::<Two>("dupes", &table("cold = 3")).unwrap_err();
        assert!(e.starts_with("[workload.dupes]: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(parse::<Two>("dupes", &table("cold = false")).is_ok());
    }
}
