//! Which multiple-comparison procedure adjusted a family's p-values, named where the
//! figures it produced are shown.

use serde::Serialize;

/// Which multiple-comparison procedure adjusted a family's p-values. Every verdict carries
/// the one that produced its `p_adjusted`, and the outputs name it from there, so a report
/// cannot say one procedure while its decisions come from another (the run's legend once
/// said "Benjamini–Hochberg" after the run had moved to the two-stage step-up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Adjustment {
    /// Benjamini & Hochberg's step-up (`decision::benjamini_hochberg`): `fsarena compare`'s family.
    BenjaminiHochberg,
    /// The adaptive two-stage step-up of Benjamini, Krieger & Yekutieli (`decision::two_stage`): the
    /// family of a run (`run`, `report`) and of `tune`.
    TwoStage,
}

impl Adjustment {
    /// The procedure as a legend names it, once per output.
    pub fn name(self) -> &'static str {
        match self {
            Adjustment::BenjaminiHochberg => "the Benjamini–Hochberg step-up",
            Adjustment::TwoStage => {
                "the adaptive two-stage step-up of Benjamini, Krieger & Yekutieli (2006)"
            }
        }
    }
}
