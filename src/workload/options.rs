//! Reading a workload's `[workload.NAME]` options into its own serde struct, with one-line
//! errors shared so every workload words a bad key or value the same way.

use serde::de::DeserializeOwned;
use serde::Deserialize;

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
    format!("[workload.{workload}]: {msg}{within}")
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

    #[test]
    fn wrong_types_are_one_line() {
        let e = parse::<Two>("dupes", &table("cold = 3")).unwrap_err();
        assert!(e.starts_with("[workload.dupes]: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(parse::<Two>("dupes", &table("cold = false")).is_ok());
    }
}
